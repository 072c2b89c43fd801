// The OpenID Connect provider of the SSO integration tests (tests/integration/sso.rs):
// npm `oidc-provider` on 127.0.0.1, with a scripted sign-in instead of a login page.
//
//   node provider.mjs <port> <redirect_uri>[,<redirect_uri>...]
//
// Clients: `svc-google` / `google-secret` and `svc-github` / `github-secret`, both with
// every given redirect URI, `client_secret_basic`, PKCE required (S256).
// The test chooses who signs in next: `POST /__test/next` with a JSON object of claims
// (`sub`, `email`, `email_verified`, `name`, `given_name`, `family_name`, `picture`), or
// `{"deny": true}` to refuse. The interaction page then finishes at once (login and
// consent) as that account. Prints `READY <issuer>` when listening.
import http from "node:http";
import Provider from "oidc-provider";

const port = Number(process.argv[2]);
const redirectUris = (process.argv[3] || "").split(",").filter(Boolean);
const issuer = `http://127.0.0.1:${port}`;
const accounts = new Map();
let next = null;

const provider = new Provider(issuer, {
  clients: ["google", "github"].map((p) => ({
    client_id: `svc-${p}`,
    client_secret: `${p}-secret`,
    redirect_uris: redirectUris,
    grant_types: ["authorization_code"],
    response_types: ["code"],
    token_endpoint_auth_method: "client_secret_basic",
  })),
  pkce: { required: () => true },
  claims: {
    openid: ["sub"],
    email: ["email", "email_verified"],
    profile: ["name", "given_name", "family_name", "picture"],
  },
  cookies: { keys: ["svc-test-cookie-key"] },
  features: { devInteractions: { enabled: false } },
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  async findAccount(ctx, id) {
    const claims = accounts.get(id);
    if (!claims) return undefined;
    return { accountId: id, async claims() { return { ...claims, sub: id }; } };
  },
});

const callback = provider.callback();

function body(req) {
  return new Promise((resolve, reject) => {
    let text = "";
    req.on("data", (c) => { text += c; });
    req.on("end", () => resolve(text));
    req.on("error", reject);
  });
}

const server = http.createServer(async (req, res) => {
  try {
    if (req.method === "POST" && req.url === "/__test/next") {
      next = JSON.parse(await body(req));
      if (next.sub) accounts.set(String(next.sub), next);
      res.writeHead(204).end();
      return;
    }
    if (req.url.startsWith("/interaction/")) {
      const details = await provider.interactionDetails(req, res);
      const chosen = next;
      if (!chosen || chosen.deny) {
        await provider.interactionFinished(req, res, {
          error: "access_denied",
          error_description: "the test refused the sign-in",
        }, { mergeWithLastSubmission: false });
        return;
      }
      const accountId = String(chosen.sub);
      const grant = new provider.Grant({ accountId, clientId: details.params.client_id });
      grant.addOIDCScope(details.params.scope);
      const grantId = await grant.save();
      await provider.interactionFinished(req, res, {
        login: { accountId },
        consent: { grantId },
      }, { mergeWithLastSubmission: false });
      return;
    }
    callback(req, res);
  } catch (e) {
    console.error(e);
    if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
    res.end(String(e));
  }
});

server.listen(port, "127.0.0.1", () => {
  console.log(`READY ${issuer}`);
});
