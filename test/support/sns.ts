import CERT_PEM from "../fixtures/sns/test-signing-cert.pem?raw";
import KEY_PEM from "../fixtures/sns/test-signing-key.pem?raw";
import { receiver } from "./helpers";

/**
 * Amazon SNS as the tests play it: messages signed with a test key (test/fixtures/sns, made with
 * openssl, never an Amazon key) whose self-signed certificate the loopback receiver serves.
 * vitest.config.ts sets SES_SNS_ORIGIN to the receiver, so the Worker trusts that origin, and
 * only it, as SNS.
 */

export { CERT_PEM };

const CERT_FILE = "sns-test-signing-cert.pem";
let certUrl: string | undefined;

/** The SigningCertURL of the test key: the receiver serves its certificate. */
export async function testCertUrl(): Promise<string> {
  certUrl ??= await receiver.putFile(CERT_FILE, CERT_PEM, "application/x-pem-file");
  return certUrl;
}

/** The fields SNS signs per type, in order (docs.aws.amazon.com/sns/latest/dg/sns-verify-signature-of-message.html), written out apart from src's. */
const SIGNED: Record<string, string[]> = {
  Notification: ["Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"],
  SubscriptionConfirmation: ["Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"],
};

function derOf(pem: string): ArrayBuffer {
  const base64 = pem.replace(/-----[A-Z ]+-----/g, "").replace(/\s+/g, "");
  return Uint8Array.from(atob(base64), (c) => c.charCodeAt(0)).buffer;
}

export interface SnsSigning {
  /** "1" (SHA-1, SNS's default) or "2" (SHA-256); any other is written as given, signed with SHA-256. */
  version?: string;
  /** SigningCertURL; the receiver's copy of the test certificate by default. */
  certUrl?: string;
  /** PKCS#8 DER of another private key (a forger's): signed with it, but naming the test certificate. */
  privateKey?: ArrayBuffer;
}

/**
 * `fields` as SNS posts them: MessageId, Timestamp and TopicArn filled in when absent (a
 * SubscriptionConfirmation's Message and Token too), then SignatureVersion, SigningCertURL and
 * Signature.
 */
export async function signedSns(fields: Record<string, unknown>, signing: SnsSigning = {}): Promise<Record<string, unknown>> {
  const message: Record<string, unknown> = {
    MessageId: crypto.randomUUID(),
    TopicArn: "arn:aws:sns:eu-west-1:123456789012:ses-feedback",
    Timestamp: new Date().toISOString(),
    ...(fields.Type === "SubscriptionConfirmation" ? { Message: "You have chosen to subscribe to the topic.", Token: "2336412f37fb687f5d51e6e2425c464de" } : {}),
    ...fields,
  };
  const version = signing.version ?? "1";
  const hash = version === "1" ? "SHA-1" : "SHA-256";
  const text = (SIGNED[String(message.Type)] ?? []).filter((name) => typeof message[name] === "string").map((name) => `${name}\n${message[name]}\n`).join("");
  const key = await crypto.subtle.importKey("pkcs8", signing.privateKey ?? derOf(KEY_PEM), { name: "RSASSA-PKCS1-v1_5", hash }, false, ["sign"]);
  const signature = new Uint8Array(await crypto.subtle.sign("RSASSA-PKCS1-v1_5", key, new TextEncoder().encode(text)));
  return { ...message, SignatureVersion: version, SigningCertURL: signing.certUrl ?? (await testCertUrl()), Signature: btoa(String.fromCharCode(...signature)) };
}

/** A forger's private key (PKCS#8 DER): a fresh RSA key that no certificate names. */
export async function otherPrivateKey(): Promise<ArrayBuffer> {
  const pair = await crypto.subtle.generateKey({ name: "RSASSA-PKCS1-v1_5", modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: "SHA-256" }, true, ["sign", "verify"]);
  return (await crypto.subtle.exportKey("pkcs8", (pair as CryptoKeyPair).privateKey)) as ArrayBuffer;
}
