import type { ClaimStatus } from '../claims/claim';
import type { UserRole } from '../companies/company-repository';

export type SignedInUser = {
  id: string;
  email: string;
  role: UserRole;
  companyId: string | null;
  companyName: string | null;
};

/** Reads behind the dashboard's pages and its sessions; src/db implements them. */
export interface DashboardRepository {
  findSignedInUser(userId: string): Promise<SignedInUser | undefined>;
  claimsPerMonth(companyId: string, fromDate: string, toDate: string): Promise<{ month: string; claims: number }[]>;
  countsByStatus(companyId: string): Promise<{ status: ClaimStatus; claims: number }[]>;
  peopleCountByCompany(): Promise<Map<string, number>>;
}

/** Rows of dashboard sessions, by the hash of the session id. */
export interface SessionRepository {
  find(sidHash: string): Promise<string | undefined>;
  upsert(s: { sidHash: string; userId: string | null; data: string; expiresAt: Date }): Promise<void>;
  delete(sidHash: string): Promise<void>;
  deleteExpired(): Promise<number>;
}
