import { isoBase64URL, isoCBOR } from "@simplewebauthn/server/helpers";

// A software authenticator for tests: an ECDSA P-256 key made with WebCrypto, answering
// registration ('none' attestation) and sign-in ceremonies the way a browser hands them over.

const encoder = new TextEncoder();
const b64 = (bytes: Uint8Array) => isoBase64URL.fromBuffer(bytes as Uint8Array<ArrayBuffer>);
const concat = (...parts: Uint8Array[]) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) (out.set(part, at), (at += part.length));
  return out;
};
const sha256 = async (bytes: Uint8Array) => new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
const uint32 = (n: number) => new Uint8Array([(n >>> 24) & 255, (n >>> 16) & 255, (n >>> 8) & 255, n & 255]);

/** DER form of a raw r||s ECDSA signature, as authenticators send it. */
function der(raw: Uint8Array): Uint8Array {
  const integer = (bytes: Uint8Array) => {
    let i = 0;
    while (i < bytes.length - 1 && bytes[i] === 0) i++;
    let body = bytes.slice(i);
    if (body[0]! & 0x80) body = concat(new Uint8Array([0]), body);
    return concat(new Uint8Array([0x02, body.length]), body);
  };
  const seq = concat(integer(raw.slice(0, 32)), integer(raw.slice(32)));
  return concat(new Uint8Array([0x30, seq.length]), seq);
}

export interface SoftAuthenticator {
  credentialId: string;
  counter: number;
  register(options: { challenge: string; rp: { id?: string } }, origin: string): Promise<any>;
  assert(options: { challenge: string; rpId?: string }, origin: string, userHandle: string): Promise<any>;
}

export async function softAuthenticator(flags = { userVerified: true }): Promise<SoftAuthenticator> {
  const keys = (await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, ["sign", "verify"])) as CryptoKeyPair;
  const jwk = (await crypto.subtle.exportKey("jwk", keys.publicKey)) as JsonWebKey;
  const rawId = crypto.getRandomValues(new Uint8Array(16));
  const cose = isoCBOR.encode(
    new Map<number, number | Uint8Array>([
      [1, 2], // kty: EC2
      [3, -7], // alg: ES256
      [-1, 1], // crv: P-256
      [-2, isoBase64URL.toBuffer(jwk.x!)],
      [-3, isoBase64URL.toBuffer(jwk.y!)],
    ]),
  );
  const flagByte = (attested: boolean) => 0x01 | (flags.userVerified ? 0x04 : 0) | (attested ? 0x40 : 0);
  const authenticator: SoftAuthenticator = {
    credentialId: b64(rawId),
    counter: 0,
    async register(options, origin) {
      const clientData = encoder.encode(JSON.stringify({ type: "webauthn.create", challenge: options.challenge, origin, crossOrigin: false }));
      const authData = concat(
        await sha256(encoder.encode(options.rp.id!)),
        new Uint8Array([flagByte(true)]),
        uint32(authenticator.counter),
        new Uint8Array(16), // AAGUID
        new Uint8Array([0, rawId.length]),
        rawId,
        cose,
      );
      const attestationObject = isoCBOR.encode(new Map<string, unknown>([["fmt", "none"], ["attStmt", new Map()], ["authData", authData]]) as never);
      return {
        id: b64(rawId),
        rawId: b64(rawId),
        type: "public-key",
        response: { clientDataJSON: b64(clientData), attestationObject: b64(attestationObject), transports: ["internal"] },
        clientExtensionResults: {},
      };
    },
    async assert(options, origin, userHandle) {
      authenticator.counter += 1;
      const clientData = encoder.encode(JSON.stringify({ type: "webauthn.get", challenge: options.challenge, origin, crossOrigin: false }));
      const authData = concat(await sha256(encoder.encode(options.rpId!)), new Uint8Array([flagByte(false)]), uint32(authenticator.counter));
      const signed = concat(authData, await sha256(clientData));
      const raw = new Uint8Array(await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, keys.privateKey, signed));
      return {
        id: b64(rawId),
        rawId: b64(rawId),
        type: "public-key",
        response: { clientDataJSON: b64(clientData), authenticatorData: b64(authData), signature: b64(der(raw)), userHandle: b64(encoder.encode(userHandle)) },
        clientExtensionResults: {},
      };
    },
  };
  return authenticator;
}
