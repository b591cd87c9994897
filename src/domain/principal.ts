/** Who is acting: a company, through an API token or a signed-in person. */
export type Principal = {
  companyId: string;
  companyName: string;
  tokenId: string | null;
  userId: string | null;
};
