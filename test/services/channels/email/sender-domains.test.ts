import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { buildMime } from "../../../../src/domain/email-message";
import { dkimRecord, generateDkimKey, importDkimPrivateKey, relaxedBody, relaxedHeader, signDkim, type DkimKey } from "../../../../src/services/channels/email/dkim";
import { emailProvider } from "../../../../src/services/channels/email/providers";
import { lookupTxt } from "../../../../src/lib/dns";
import { sendCampaignBatch } from "../../../../src/services/broadcasts/send";
import { getCampaign } from "../../../../src/store/campaigns/definitions";
import { publishCampaign } from "../../../../src/store/campaigns/publish";
import { admin, ADMIN_TOKEN, call, createPanel, panelData, PUBLIC_HTTPS, receiver, type TestPanel } from "../../../support/helpers";
import { broadcastData, campaign, outbox, publish, rawMessage, scheduleIn, waitForImport } from "../../../support/broadcasts";
import { publishTxt, uniqueDomain, verifyDkim } from "../../../support/dns";
import { parseMessage, unsubscribeUris } from "../../../support/mime";

const message = (from: string) =>
  buildMime({
    from: { name: "Shop", address: from },
    to: "ada@example.com",
    subject: `A subject long enough to be folded over more than one line of the header, ${"and more ".repeat(6)}`,
    html: "<p>Hello  there </p>\r\n\r\n",
    text: "Hello there\r\n",
    messageId: "cmp_1.7",
    date: Date.UTC(2026, 0, 2, 3, 4, 5),
    // Long enough that List-Unsubscribe is folded: the value on a continuation line of its own.
    unsubscribeUrl: `https://links.example.com/t/u/${"T".repeat(40)}`,
    headers: { "X-Campaign-ID": "cmp_1", "Reply-To": "replies@example.com" },
  });

async function keyPair(domain: string, algorithm: DkimKey["algorithm"], selector: string) {
  const generated = await generateDkimKey(algorithm);
  const key: DkimKey = { domain, selector, algorithm, privateKey: await importDkimPrivateKey(algorithm, generated.privatePkcs8) };
  return { key, record: { [`${selector}._domainkey.${domain}`]: dkimRecord(algorithm, generated.publicKey) } };
}

describe("DKIM signatures, verified by mailauth as a receiving server would", () => {
  it("RSA-SHA256 and Ed25519-SHA256 both pass, cover the RFC 8058 headers, and break when the message is changed", async () => {
    const domain = uniqueDomain();
    const rsa = await keyPair(domain, "rsa-sha256", "apiv2r");
    const ed = await keyPair(domain, "ed25519-sha256", "apiv2e");
    const raw = await signDkim(message(`shop@${domain}`), [rsa.key, ed.key], Date.UTC(2026, 0, 2, 3, 4, 5));
    const txt = { ...rsa.record, ...ed.record };

    const verdicts = await verifyDkim(raw, txt);
    expect(verdicts.map((v) => [v.result, v.algorithm, v.selector, v.domain]).sort()).toEqual([
      ["pass", "ed25519-sha256", "apiv2e", domain],
      ["pass", "rsa-sha256", "apiv2r", domain],
    ]);
    for (const verdict of verdicts) {
      expect(verdict.signedHeaders).toEqual(expect.arrayContaining(["from", "reply-to", "to", "subject", "date", "message-id", "list-unsubscribe", "list-unsubscribe-post"]));
    }
    // Every header line of the signed message, the DKIM-Signature and List-Unsubscribe included, is folded within 78 characters.
    expect(raw).toContain(`\r\nList-Unsubscribe:\r\n <https://links.example.com/t/u/${"T".repeat(40)}>\r\n`);
    expect(raw.split("\r\n\r\n")[0]!.split("\r\n").filter((line) => line.length > 78)).toEqual([]);

    // An edit on the way: the subject, the one-click header, the body, an added From.
    const edits = [
      raw.replace("Subject: A subject", "Subject: B subject"),
      raw.replace("List-Unsubscribe-Post: List-Unsubscribe=One-Click", "List-Unsubscribe-Post: nothing"),
      raw.replace(/(Content-Transfer-Encoding: quoted-printable\r\n\r\n)Hello/, "$1Hullo"),
      raw.replace("\r\nTo:", "\r\nFrom: boss@evil.example\r\nTo:"),
      raw.replace("Reply-To: replies@example.com", "Reply-To: replies@evil.example"),
    ];
    for (const edited of edits) {
      expect(edited).not.toBe(raw);
      expect((await verifyDkim(edited, txt)).map((v) => v.result)).not.toContain("pass");
    }
    // Another domain's key under the same selector does not verify the signature.
    const stranger = await keyPair(domain, "rsa-sha256", "apiv2r");
    expect((await verifyDkim(raw, { ...stranger.record, ...ed.record })).find((v) => v.algorithm === "rsa-sha256")!.result).toBe("fail");
  });

  it("still verifies after a relay refolds headers and adds trailing spaces (relaxed canonicalization)", async () => {
    const domain = uniqueDomain();
    const rsa = await keyPair(domain, "rsa-sha256", "apiv2r");
    const raw = await signDkim(message(`news@${domain}`), [rsa.key], Date.now());
    const relayed = raw.replace(/\r\n (?=\S)/g, " ").replace("Subject: ", "Subject:\t ").replace(/(Content-Type: text\/plain; charset=UTF-8)/, "$1  ");
    expect(relayed).not.toBe(raw);
    expect((await verifyDkim(relayed, rsa.record)).map((v) => v.result)).toEqual(["pass"]);
  });

  it("canonicalizes as RFC 6376 3.4.5's example does", () => {
    expect(relaxedHeader("A: X")).toBe("a:X");
    expect(relaxedHeader("B : Y\t\r\n\tZ  ")).toBe("b:Y Z");
    expect(relaxedBody(" C \r\nD \t E\r\n\r\n\r\n")).toBe(" C\r\nD E\r\n");
    expect(relaxedBody("\r\n\r\n")).toBe("");
  });
});

describe("DNS-over-HTTPS lookups, against a loopback stand-in of the JSON API", () => {
  it("joins split TXT strings, finds nothing for a missing name, and reports a failing resolver", async () => {
    const domain = uniqueDomain();
    const long = `v=DKIM1; k=rsa; p=${"A".repeat(400)}`;
    await publishTxt({ [domain]: ["v=spf1 include:amazonses.com ~all", 'quoted "text"'], [`k._domainkey.${domain}`]: [long], [`_dmarc.${domain}`]: "SERVFAIL" });
    expect(await lookupTxt(env.DOH_URL, domain)).toEqual({ ok: true, records: ["v=spf1 include:amazonses.com ~all", 'quoted "text"'], ttlSeconds: 300 });
    expect(await lookupTxt(env.DOH_URL, `k._domainkey.${domain}`)).toEqual({ ok: true, records: [long], ttlSeconds: 300 });
    expect(await lookupTxt(env.DOH_URL, `nothing.${domain}`)).toEqual({ ok: true, records: [] });
    expect(await lookupTxt(env.DOH_URL, `_dmarc.${domain}`)).toEqual({ ok: false, error: `the DNS lookup of _dmarc.${domain} failed (status 2)` });
    expect(await lookupTxt(receiver.url("/nowhere"), domain)).toEqual({ ok: false, error: "the DNS resolver answered HTTP 404" });
  });
});

/** Adds the domain to the panel and returns the records the answer says to publish, by purpose. */
async function addDomain(panel: TestPanel, domain: string) {
  const added = await admin("POST", `/panels/${panel.id}/sender-domains`, { domain });
  expect(added.status).toBe(201);
  type Published = { purpose: string; type: string; name: string; value: string };
  const records = Object.fromEntries((added.body.records as Published[]).map((r) => [r.purpose, r])) as Record<"spf" | "dkim" | "dkim_ed25519" | "dmarc", Published>;
  return { body: added.body, records };
}

describe("sender domains of a panel", () => {
  it("are added with their records to publish, checked over DNS (each record pass or fail with what to publish), and verified once all pass", async () => {
    const panel = await createPanel();
    const domain = uniqueDomain();
    const { body, records } = await addDomain(panel, ` ${domain.toUpperCase()}. `);
    expect(body).toMatchObject({ domain, state: "pending", checks: null, checked_at: null });
    expect(records.spf).toEqual({ purpose: "spf", type: "TXT", name: domain, value: null });
    expect(records.dkim).toMatchObject({ type: "TXT", name: `apiv2r._domainkey.${domain}`, value: expect.stringMatching(/^v=DKIM1; k=rsa; p=MIIBIjAN[A-Za-z0-9+/]+=*$/) });
    expect(records.dkim_ed25519).toMatchObject({ type: "TXT", name: `apiv2e._domainkey.${domain}`, value: expect.stringMatching(/^v=DKIM1; k=ed25519; p=[A-Za-z0-9+/]{43}=$/) });
    expect(records.dmarc).toEqual({ purpose: "dmarc", type: "TXT", name: `_dmarc.${domain}`, value: "v=DMARC1; p=none; adkim=r; aspf=r" });
    expect(JSON.stringify(body)).not.toMatch(/private|pkcs8|MII[A-Za-z0-9+/]{20,}AgEA/);
    expect((await admin("POST", `/panels/${panel.id}/sender-domains`, { domain })).status).toBe(409);

    // Nothing published yet: every check fails and says why.
    let checked = await admin("POST", `/panels/${panel.id}/sender-domains/${domain}/verify`);
    expect(checked.status).toBe(200);
    expect(checked.body.state).toBe("failed");
    expect(checked.body.checks).toMatchObject({
      spf: { status: "fail", name: domain, reason: "no SPF record (v=spf1) is published" },
      dkim: { status: "fail", expected: records.dkim.value, reason: "no DKIM record is published at this name" },
      dkim_ed25519: { status: "fail" },
      dmarc: { status: "fail", expected: "v=DMARC1; p=none; adkim=r; aspf=r", reason: "no DMARC record (v=DMARC1) is published" },
    });

    // A wrong key, two SPF records and a DMARC without a policy: still failing, each for its reason.
    await publishTxt({
      [domain]: ["v=spf1 -all", "v=spf1 include:other.example ~all", "google-site-verification=x"],
      [records.dkim.name]: ["v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAwrong"],
      [records.dmarc.name]: ["v=DMARC1; rua=mailto:d@example.com"],
    });
    checked = await admin("POST", `/panels/${panel.id}/sender-domains/${domain}/verify`);
    expect(checked.body.checks.spf).toMatchObject({ status: "fail", reason: "2 SPF records are published; receivers treat more than one as an error", found: ["v=spf1 -all", "v=spf1 include:other.example ~all"] });
    expect(checked.body.checks.dkim).toMatchObject({ status: "fail", reason: "the published DKIM key is not this domain's key" });
    expect(checked.body.checks.dmarc).toMatchObject({ status: "fail", reason: "the DMARC record has no policy (p=none, quarantine or reject)" });

    // Published as shown (the RSA key only): verified; the Ed25519 record is reported apart.
    await publishTxt({ [domain]: ["v=spf1 include:amazonses.com ~all"], [records.dkim.name]: [records.dkim.value], [records.dmarc.name]: ["v=DMARC1; p=quarantine"] });
    checked = await admin("POST", `/panels/${panel.id}/sender-domains/${domain}/verify`);
    expect(checked.body).toMatchObject({ state: "verified", checked_at: expect.stringMatching(/^\d{4}-/) });
    expect(Object.fromEntries(Object.entries(checked.body.checks).map(([k, v]) => [k, (v as { status: string }).status]))).toEqual({ spf: "pass", dkim: "pass", dkim_ed25519: "fail", dmarc: "pass" });
    expect((await admin("GET", `/panels/${panel.id}/sender-domains`)).body.sender_domains.map((d: { domain: string; state: string }) => [d.domain, d.state])).toEqual([[domain, "verified"]]);

    // Another panel sees none of it; a bad domain is a 400 naming the field.
    const other = await createPanel();
    expect((await admin("GET", `/panels/${other.id}/sender-domains/${domain}`)).status).toBe(404);
    const bad = await admin("POST", `/panels/${other.id}/sender-domains`, { domain: "localhost" });
    expect(bad.status).toBe(400);
    expect(bad.body.errors).toEqual([{ field: "domain", message: 'must be a domain with at least two labels, such as example.com, not "localhost"' }]);
    const removed = await call(`/admin/v1/panels/${panel.id}/sender-domains/${domain}`, { method: "DELETE", headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(removed.status).toBe(204);
    expect((await admin("GET", `/panels/${panel.id}/sender-domains/${domain}`)).status).toBe(404);
  });
});

/** A published campaign from `sender`, whose one batch the test sends itself. */
async function publishedCampaign(panel: TestPanel, sender: string) {
  const created = await publish(panel, await broadcastData({ schedule_date: scheduleIn(60 * 24 * 40), sender_email_id: sender }, "EMAIL,NAME\nada@example.com,Ada\n"));
  const id = created.body.CampaignID;
  await waitForImport(panel, id);
  const stored = (await getCampaign(panelData, panel.id, id))!;
  await publishCampaign(panelData, stored, 100, stored.sendAt);
  return { id, nudge: { kind: "campaign_batch" as const, panelId: panel.id, campaignId: id, batch: 0 } };
}

describe("campaign mail from a sender domain", () => {
  it("is DKIM-signed with the domain's keys (Ed25519 once published), and a receiver verifies it from the raw message", async () => {
    const panel = await createPanel();
    const domain = uniqueDomain();
    const { records } = await addDomain(panel, domain);
    const published = { [domain]: "v=spf1 ~all", [records.dkim.name]: records.dkim.value, [records.dkim_ed25519.name]: records.dkim_ed25519.value, [records.dmarc.name]: "v=DMARC1; p=none" };
    await publishTxt(Object.fromEntries(Object.entries(published).map(([k, v]) => [k, [v]])));
    expect((await admin("POST", `/panels/${panel.id}/sender-domains/${domain}/verify`)).body.state).toBe("verified");

    const { id, nudge } = await publishedCampaign(panel, `news@${domain}`);
    await sendCampaignBatch(env, emailProvider(env), nudge);
    const [sent] = await outbox(panel);
    const raw = await rawMessage(panel, sent.id);
    expect(raw.replace(/\r\n\t/g, " ").startsWith("DKIM-Signature: v=1; a=ed25519-sha256; c=relaxed/relaxed; d=" + domain)).toBe(true);
    const verdicts = await verifyDkim(raw, published);
    expect(verdicts.map((v) => [v.algorithm, v.result]).sort()).toEqual([
      ["ed25519-sha256", "pass"],
      ["rsa-sha256", "pass"],
    ]);
    expect(parseMessage(raw).text).toContain("Hello Ada");
    // List-Unsubscribe is folded (signed folded, verified unfolded); only its one unbreakable URL may pass 78 characters.
    const [unsubscribe] = unsubscribeUris(raw);
    expect(raw).toContain(`\r\nList-Unsubscribe:\r\n <${unsubscribe}>\r\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n`);
    expect(raw.split("\r\n\r\n")[0]!.split("\r\n").filter((line) => line.length > 78 && line !== ` <${unsubscribe}>`)).toEqual([]);
    expect((await campaign(panel, id)).counters).toMatchObject({ sent: 1 });
  });

  it("from an unverified domain: the outbox keeps it unsigned and says so; SES is never called and the message fails saying why", async () => {
    const panel = await createPanel();
    const domain = uniqueDomain();
    const { id, nudge } = await publishedCampaign(panel, `news@${domain}`);
    await sendCampaignBatch(env, emailProvider(env), nudge);
    const [kept] = await outbox(panel);
    expect(kept.note).toBe(`the sender domain ${domain} is not verified in this panel; a provider that sends real email would refuse this message`);
    expect(await rawMessage(panel, kept.id)).not.toContain("DKIM-Signature");

    const bucket = receiver.bucket("ses");
    const sesEnv = { ...env, EMAIL_PROVIDER: "ses", PUBLIC_BASE_URL: PUBLIC_HTTPS, SES_ENDPOINT: receiver.hookUrl(bucket), SES_ACCESS_KEY_ID: "a", SES_SECRET_ACCESS_KEY: "b" };
    const second = await publishedCampaign(panel, `news@${domain}`);
    await addDomain(panel, domain);
    await sendCampaignBatch(sesEnv, emailProvider(sesEnv), second.nudge);
    expect(await receiver.requests(bucket)).toEqual([]);
    expect((await campaign(panel, second.id)).counters).toMatchObject({ sent: 0, failed: 1, queued: 0 });
    const row = await panelData.prepare("SELECT status, error FROM campaign_messages WHERE campaign_id = ?").bind(second.id).first<{ status: string; error: string }>();
    expect(row).toEqual({
      status: "failed",
      error: `the sender domain ${domain} is not verified in this panel: add it (POST /admin/v1/panels/{panel}/sender-domains), publish its SPF, DKIM and DMARC records and verify it`,
    });
    expect((await campaign(panel, id)).counters).toMatchObject({ sent: 1 });
  });
});

describe("a panel's own tracking domain", () => {
  it("is used for links, the pixel and the unsubscribe link once its CNAME to the service is found; those links work on that host", async () => {
    const panel = await createPanel();
    const host = `t.${uniqueDomain()}`;
    const set = await admin("PUT", `/panels/${panel.id}/tracking-domain`, { domain: host.toUpperCase() });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ domain: host, verified: false, record: { type: "CNAME", name: host, value: "127.0.0.1" } });
    expect((await admin("PUT", `/panels/${panel.id}/tracking-domain`, { domain: "nope" })).status).toBe(400);

    // Not published, then pointing elsewhere: not verified, and the mail keeps PUBLIC_BASE_URL.
    expect((await admin("POST", `/panels/${panel.id}/tracking-domain/verify`)).body).toMatchObject({ verified: false, found: [], reason: `no CNAME record points ${host} at 127.0.0.1` });
    await publishTxt({ [`${host} CNAME`]: ["elsewhere.example.net"] });
    expect((await admin("POST", `/panels/${panel.id}/tracking-domain/verify`)).body).toMatchObject({ verified: false, reason: "the CNAME points at elsewhere.example.net, not 127.0.0.1" });
    const before = await publishedCampaign(panel, "news@example.com");
    await sendCampaignBatch(env, emailProvider(env), before.nudge);
    expect(unsubscribeUris(await rawMessage(panel, (await outbox(panel))[0].id))).toEqual([expect.stringMatching(/^http:\/\/127\.0\.0\.1:8787\/t\/u\//)]);

    await publishTxt({ [`${host} CNAME`]: ["127.0.0.1"] });
    expect((await admin("POST", `/panels/${panel.id}/tracking-domain/verify`)).body).toMatchObject({ verified: true, found: ["127.0.0.1"], reason: null });
    const { id, nudge } = await publishedCampaign(panel, "news@example.com");
    await sendCampaignBatch(env, emailProvider(env), nudge);
    const raw = await rawMessage(panel, (await outbox(panel)).find((m: { campaign_id: string }) => m.campaign_id === id).id);
    const message = parseMessage(raw);
    expect(message.headers.get("list-unsubscribe")).toMatch(new RegExp(`^<https://${host.replace(/\./g, "\\.")}/t/u/[A-Za-z0-9_-]+>$`));
    const links = [...message.html.matchAll(/(?:href|src)="(https?:\/\/[^/"]+)\/t\//g)].map((m) => m[1]);
    expect(new Set(links)).toEqual(new Set([`https://${host}`]));
    expect(message.text).toContain(`Unsubscribe: https://${host}/t/u/`);

    // The pixel served on the tracking host counts the open.
    const pixel = /<img src="https:\/\/[^/]+(\/t\/o\/[^"]+)"/.exec(message.html)![1]!;
    expect((await exports.default.fetch(new Request(`https://${host}${pixel}`))).headers.get("content-type")).toBe("image/gif");
    expect((await campaign(panel, id)).counters).toMatchObject({ opens: 1 });
  });

  it("is one panel's: another panel of the deployment can neither set nor verify a tracking domain a panel uses verified", async () => {
    const brand = await createPanel();
    const other = await createPanel();
    const host = `links.${uniqueDomain()}`;
    await publishTxt({ [`${host} CNAME`]: ["127.0.0.1"] });
    // Both set it before either verified it: the first to verify keeps it.
    expect((await admin("PUT", `/panels/${brand.id}/tracking-domain`, { domain: host })).status).toBe(200);
    expect((await admin("PUT", `/panels/${other.id}/tracking-domain`, { domain: host })).status).toBe(200);
    expect((await admin("POST", `/panels/${brand.id}/tracking-domain/verify`)).body).toMatchObject({ verified: true, reason: null });
    const taken = "another panel of this deployment uses this tracking domain: it can be used here once removed there";
    expect((await admin("POST", `/panels/${other.id}/tracking-domain/verify`)).body).toMatchObject({ verified: false, found: ["127.0.0.1"], reason: taken });
    expect((await admin("GET", `/panels/${other.id}/tracking-domain`)).body.verified).toBe(false);
    // A third panel cannot even set it.
    const third = await createPanel();
    const refused = await admin("PUT", `/panels/${third.id}/tracking-domain`, { domain: host.toUpperCase() });
    expect([refused.status, refused.body.errors]).toEqual([409, [{ field: "domain", message: taken }]]);
    expect((await admin("GET", `/panels/${third.id}/tracking-domain`)).status).toBe(404);
    // Removed from the brand's panel, it is free again.
    expect((await call(`/admin/v1/panels/${brand.id}/tracking-domain`, { method: "DELETE", headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).status).toBe(204);
    expect((await admin("POST", `/panels/${other.id}/tracking-domain/verify`)).body).toMatchObject({ verified: true, reason: null });
  });
});
