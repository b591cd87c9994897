import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import * as oidc from 'openid-client';

import { providerConfiguration, type ProviderMetadata } from '../../oidc';
import { renderPage } from '../render';
import { SYSTEM_ACTOR } from '../../domain/audit/audit';
import { afterFirstFactor, personEvent, recordPerson, recordSignInEvent } from '../sign-in-flow';

/** An SSO sign-in must come back from the provider within this time. */
const SSO_ROUND_TRIP_MS = 10 * 60 * 1000;

type Provider = {
  companyId: string;
  issuer: string;
  clientId: string;
  clientSecret: () => string;
  metadata: Record<string, unknown> | null;
};

/**
 * The provider's client, from the discovery document kept when the settings were saved (src/oidc.ts):
 * a sign-in never fetches a provider's address. undefined for settings saved before it was kept.
 */
function configurationOf(p: Provider, allowPrivate: boolean): oidc.Configuration | undefined {
  if (!p.metadata) return undefined;
  return providerConfiguration({ ...p, metadata: p.metadata as unknown as ProviderMetadata }, allowPrivate);
}

/** The address the provider sends people back to; the settings page shows it for registering at the provider. */
export const redirectUriOf = (request: FastifyRequest) => `${request.protocol}://${request.host}/login/sso/callback`;

async function failed(request: FastifyRequest, reply: FastifyReply, status: number, message: string, reason: string, email = '') {
  request.log.info({ reason }, 'SSO sign-in refused');
  await recordSignInEvent(request, 'person.sign_in_failed', { email: email || 'unknown (single sign-on)' });
  if (email) await request.server.deps.signInThrottle.failed(email, request.ip);
  return renderPage(reply, 'login', { step: 'email', email, next: '/', error: message, notice: null }, status);
}

/** Sends the person to their company's provider: authorization code with PKCE (S256), state and nonce kept in the session. */
export async function startSso(request: FastifyRequest, reply: FastifyReply, provider: Provider, email: string, next: string) {
  const { deps } = request.server;
  const now = deps.now();
  const config = configurationOf(provider, deps.config.oidcAllowPrivate);
  if (!config) {
    request.log.warn({ companyId: provider.companyId }, 'SSO settings without a stored discovery document');
    return renderPage(
      reply,
      'login',
      {
        step: 'email',
        email,
        next,
        error: "Your company's single sign-on must be saved again by its admin before it can be used. Ask your admin.",
        notice: null,
      },
      503,
    );
  }
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const nonce = oidc.randomNonce();
  request.session.sso = { companyId: provider.companyId, state, nonce, verifier, at: now, next };
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: redirectUriOf(request),
    scope: 'openid email',
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    nonce,
    login_hint: email,
  });
  // A page that moves on at once, not a redirect: the sign-in form's Content-Security-Policy
  // (form-action 'self') would stop a form submission redirected to another site.
  return renderPage(reply, 'sso-redirect', { title: 'Signing in', url: url.href, host: new URL(provider.issuer).host });
}

export async function ssoRoutes(app: FastifyInstance) {
  const { deps } = app;

  /**
   * The provider's answer. The state, the PKCE verifier and the nonce of this session's sign-in
   * are used once (removed before anything else); openid-client checks the state, exchanges the
   * code and checks the ID token's signature, issuer, audience, expiry and nonce.
   */
  app.get('/login/sso/callback', { config: { access: 'public' } }, async (request, reply) => {
    const pending = request.session.sso;
    delete request.session.sso;
    if (!pending || deps.now() - pending.at > SSO_ROUND_TRIP_MS) {
      return failed(
        request,
        reply,
        400,
        'This sign-in has expired or was already used. Enter your email to start again.',
        'sso_no_pending',
      );
    }
    const provider = await deps.signIn.ssoForCompany(pending.companyId);
    if (!provider) return failed(request, reply, 400, 'Single sign-on is no longer set up for your company.', 'sso_not_configured');
    let email: string;
    try {
      const config = configurationOf(provider, deps.config.oidcAllowPrivate);
      if (!config) throw new Error('no stored discovery document');
      const current = new URL(request.url, redirectUriOf(request));
      const tokens = await oidc.authorizationCodeGrant(config, current, {
        pkceCodeVerifier: pending.verifier,
        expectedState: pending.state,
        expectedNonce: pending.nonce,
        idTokenExpected: true,
      });
      const idToken = tokens.claims();
      if (!idToken) throw new Error('no ID token');
      // The email from the ID token, or else (as many providers put it there only) from the
      // userinfo endpoint, for the ID token's subject.
      const claims = (typeof idToken.email === 'string' ? idToken : await oidc.fetchUserInfo(config, tokens.access_token, idToken.sub)) as {
        email?: unknown;
        email_verified?: unknown;
      };
      // Only an address the provider itself confirmed signs anyone in (or creates anyone):
      // `email_verified` missing is refused as false is.
      if (typeof claims.email !== 'string' || claims.email_verified !== true) {
        return failed(
          request,
          reply,
          403,
          'Your provider did not confirm your email address, so you cannot be signed in. Ask your admin.',
          'sso_email_not_verified',
        );
      }
      email = claims.email.toLowerCase();
    } catch (err) {
      request.log.info(
        { err: { name: (err as Error).name, code: (err as { code?: string }).code, message: (err as Error).message } },
        'SSO answer refused',
      );
      return failed(request, reply, 401, 'Single sign-on did not succeed. Enter your email to start again.', 'sso_refused');
    }
    const person = await deps.signIn.ssoPerson(pending.companyId, email, (user) =>
      // The first SSO sign-in of a person of a covered domain creates them: by the service itself.
      ({ ...personEvent(request, 'person.created', recordPerson(user)), actor: SYSTEM_ACTOR }),
    );
    if (!person) {
      return failed(
        request,
        reply,
        403,
        'Your email address is not one your company signs in with here. Ask your admin.',
        'sso_not_covered',
        email,
      );
    }
    if (person.created) request.log.info({ userId: person.user.id }, 'person created at first SSO sign-in');
    return afterFirstFactor(request, reply, person.user, pending.next, 'sso');
  });
}
