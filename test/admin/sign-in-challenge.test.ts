import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { proofHolds, solveChallenge } from "../../src/domain/sign-in-challenge";
import { CHALLENGE_AFTER_FAILURES, CHALLENGE_TTL_MS, FIRST_DIFFICULTY, issueChallenge, MAX_DIFFICULTY } from "../../src/services/operators/sign-in-challenge";
import { admin, createPanel } from "../support/helpers";
import { challengeFor, signInFrom as signIn, solvedChallenge as solved } from "../support/operators";

let count = 0;

async function operator(): Promise<{ email: string; password: string }> {
  const panel = await createPanel();
  const email = `challenged${++count}-${Date.now()}@example.com`;
  const password = "the operator's own passphrase";
  const added = await admin("POST", `/panels/${panel.id}/operators`, { email, role: "owner", password });
  expect(added.status).toBe(201);
  return { email, password };
}

async function fail(email: string, times: number, addressOf: (i: number) => string): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < times; i++) statuses.push((await signIn({ email, password: `wrong guess ${i}` }, addressOf(i))).status);
  return statuses;
}

describe("sign-in challenge after failures for an account", () => {
  it("an attacker's 50 failures from many addresses never lock the operator out: a solved challenge and the right password sign in", async () => {
    const { email, password } = await operator();
    const statuses: number[] = [];
    for (let i = 0; i < 50; i++) {
      const address = `198.18.${Math.floor(i / 200)}.${i % 200}`;
      const guess = { email, password: `attacker guess ${i}` };
      let answer = await signIn(guess, address);
      if (i >= CHALLENGE_AFTER_FAILURES) {
        // Past the threshold a bare guess is refused before the password is looked at; solving costs the attacker each time.
        expect(answer.status).toBe(400);
        expect(answer.body.errors).toEqual([{ field: "challenge", message: expect.stringContaining("is required") }]);
        const { token, nonce } = await solved(email);
        answer = await signIn({ ...guess, challenge: { token, nonce } }, address);
      }
      statuses.push(answer.status);
    }
    expect(statuses).toEqual(Array(50).fill(401));

    const hardest = await challengeFor(email);
    expect(hardest.difficulty).toBe(MAX_DIFFICULTY);
    expect(Date.parse(hardest.expires_at) - Date.now()).toBeLessThanOrEqual(CHALLENGE_TTL_MS);

    // The operator's browser, from its own address: the right password alone is asked for the challenge, not locked out.
    const bare = await signIn({ email, password }, "192.0.2.77");
    expect(bare.status).toBe(400);
    expect(bare.body.errors[0].field).toBe("challenge");
    const { token, nonce } = await solved(email);
    const inside = await signIn({ email, password, challenge: { token, nonce } }, "192.0.2.77");
    expect(inside.status).toBe(200);
    expect(inside.body.operator.email).toBe(email);
    expect(inside.cookie).toMatch(/^panel_session=/);

    // Signing in clears the account's failures: the next sign-in needs no challenge.
    expect(await challengeFor(email)).toEqual({ required: false });
    expect((await signIn({ email, password }, "192.0.2.77")).status).toBe(200);
  }, 180_000);

  it("difficulty starts after the threshold and grows with failures, up to the cap", async () => {
    const { email } = await operator();
    expect(await challengeFor(email)).toEqual({ required: false });
    await fail(email, CHALLENGE_AFTER_FAILURES, (i) => `198.18.10.${i}`);
    expect((await challengeFor(email)).difficulty).toBe(FIRST_DIFFICULTY);
  });

  it("an unknown email is asked for a challenge just as an account is (no enumeration)", async () => {
    const known = await operator();
    const unknown = `nobody-${Date.now()}@example.com`;
    await fail(known.email, CHALLENGE_AFTER_FAILURES, (i) => `198.18.20.${i}`);
    await fail(unknown, CHALLENGE_AFTER_FAILURES, (i) => `198.18.21.${i}`);
    const [forKnown, forUnknown] = [await challengeFor(known.email), await challengeFor(unknown)];
    expect(Object.keys(forKnown).sort()).toEqual(Object.keys(forUnknown).sort());
    expect(forKnown.difficulty).toBe(forUnknown.difficulty);
    const bareKnown = await signIn({ email: known.email, password: "a guess" }, "198.18.22.1");
    const bareUnknown = await signIn({ email: unknown, password: "a guess" }, "198.18.22.1");
    expect(bareKnown).toEqual(bareUnknown);
    const { token, nonce } = await solved(unknown);
    expect((await signIn({ email: unknown, password: "a guess", challenge: { token, nonce } }, "198.18.22.2")).body).toEqual({
      error: "The email or the password is wrong",
      errors: [],
    });
  });

  it("refuses a missing, forged, other account's, expired, too easy, unsolved or reused challenge with 400 naming the field, even with the right password", async () => {
    const { email, password } = await operator();
    const other = await operator();
    await fail(email, CHALLENGE_AFTER_FAILURES, (i) => `198.18.30.${i}`);
    await fail(other.email, CHALLENGE_AFTER_FAILURES, (i) => `198.18.31.${i}`);
    const address = "192.0.2.88";
    const refused = async (challenge: unknown, field: string, reason: RegExp) => {
      const answer = await signIn({ email, password, ...(challenge === undefined ? {} : { challenge }) }, address);
      expect(answer.status).toBe(400);
      expect(answer.cookie).toBeNull();
      expect(answer.body.errors).toHaveLength(1);
      expect(answer.body.errors[0].field).toBe(field);
      expect(answer.body.errors[0].message).toMatch(reason);
    };

    await refused(undefined, "challenge", /is required/);
    await refused("not an object", "challenge", /must be an object/);
    await refused({ token: "abc.def", nonce: "1" }, "challenge", /not a challenge this server issued/);
    const genuine = await solved(email);
    const [body, signature] = genuine.token.split(".");
    await refused({ token: `${body}x.${signature}`, nonce: genuine.nonce }, "challenge", /not a challenge this server issued/);
    const othersChallenge = await solved(other.email);
    await refused({ token: othersChallenge.token, nonce: othersChallenge.nonce }, "challenge", /not a challenge this server issued for this email/);

    const expired = await issueChallenge(env.SECRETS_KEY, email, FIRST_DIFFICULTY, Date.now() - CHALLENGE_TTL_MS - 1000);
    await refused({ token: expired.token, nonce: await solveChallenge(expired.token, expired.difficulty) }, "challenge", /expired/);
    const tooEasy = await issueChallenge(env.SECRETS_KEY, email, 1, Date.now());
    await refused({ token: tooEasy.token, nonce: await solveChallenge(tooEasy.token, 1) }, "challenge", /easier than this account now needs/);

    // A nonce that does not give the zero bits (find one whose hash misses them).
    let wrongNonce = 0;
    while (await proofHolds(genuine.token, `x${wrongNonce}`, genuine.difficulty)) wrongNonce++;
    await refused({ token: genuine.token, nonce: `x${wrongNonce}` }, "challenge.nonce", /does not solve the challenge/);

    // A solved challenge is spent by the try that sends it, whatever the password.
    const wrongPassword = await signIn({ email, password: "still a guess", challenge: genuine }, address);
    expect(wrongPassword.status).toBe(401);
    await refused({ token: genuine.token, nonce: genuine.nonce }, "challenge", /already used/);

    // Nothing of that locked the account: a fresh solved challenge signs in.
    const fresh = await solved(email);
    expect((await signIn({ email, password, challenge: fresh }, address)).status).toBe(200);
  });

  it("the per-address limit still refuses that address (429), also with the right password; other addresses sign in", async () => {
    const { email, password } = await operator();
    const address = "203.0.113.99";
    const statuses = await fail(email, 4, () => address);
    for (let i = 0; statuses.length < 31; i++) {
      statuses.push((await signIn({ email: `guess${i}-${Date.now()}@example.com`, password: "a guess" }, address)).status);
    }
    expect(statuses.slice(0, 30)).toEqual(Array(30).fill(401));
    expect(statuses[30]).toBe(429);
    expect((await signIn({ email, password }, address)).status).toBe(429);
    expect((await signIn({ email, password }, "203.0.113.100")).status).toBe(200);
  });
});
