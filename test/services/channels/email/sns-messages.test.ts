import { describe, expect, it } from "vitest";
import { isSnsUrl, snsStringToSign, verifySnsMessage } from "../../../../src/services/channels/email/sns-messages";
import { CERT_PEM, signedSns, testCertUrl } from "../../../support/sns";
import { receiver } from "../../../support/helpers";

describe("the string SNS signs", () => {
  const notification = { Type: "Notification", MessageId: "m-1", TopicArn: "arn:aws:sns:eu-west-1:123456789012:t", Message: 'line one\nline "two" é', Timestamp: "2026-01-02T03:04:06.000Z" };

  it("is Name\\nvalue\\n for each signed field of a Notification, in order, Subject only when present", () => {
    const fields = 'Message\nline one\nline "two" é\nMessageId\nm-1\nTimestamp\n2026-01-02T03:04:06.000Z\nTopicArn\narn:aws:sns:eu-west-1:123456789012:t\nType\nNotification\n';
    expect(snsStringToSign({ ...notification, Signature: "x", SigningCertURL: "y", UnsubscribeURL: "z" })).toBe(fields);
    expect(snsStringToSign({ ...notification, Subject: null })).toBe(fields);
    expect(snsStringToSign({ ...notification, Subject: "Hi" })).toBe(fields.replace("MessageId\nm-1\n", "MessageId\nm-1\nSubject\nHi\n"));
  });

  it("covers SubscribeURL and Token of a subscription or unsubscription confirmation; a missing field or another type has none", () => {
    const confirmation = { ...notification, Type: "SubscriptionConfirmation", SubscribeURL: "https://sns.eu-west-1.amazonaws.com/?Action=ConfirmSubscription", Token: "tok", Subject: "ignored" };
    const expected = `Message\n${notification.Message}\nMessageId\nm-1\nSubscribeURL\n${confirmation.SubscribeURL}\nTimestamp\n${notification.Timestamp}\nToken\ntok\nTopicArn\n${notification.TopicArn}\nType\nSubscriptionConfirmation\n`;
    expect(snsStringToSign(confirmation)).toBe(expected);
    expect(snsStringToSign({ ...confirmation, Type: "UnsubscribeConfirmation" })).toBe(expected.replace(/SubscriptionConfirmation\n$/, "UnsubscribeConfirmation\n"));
    expect(snsStringToSign({ ...confirmation, Token: undefined })).toBeNull();
    expect(snsStringToSign({ ...notification, Timestamp: 1 })).toBeNull();
    expect(snsStringToSign({ ...notification, Type: "Other" })).toBeNull();
    expect(snsStringToSign({ ...notification, Type: "toString" })).toBeNull();
  });
});

describe("SNS's URLs", () => {
  it("are https on sns.<region>.amazonaws.com(.cn), or only the configured origin when there is one", () => {
    for (const url of ["https://sns.eu-west-1.amazonaws.com/SimpleNotificationService-0123.pem", "https://sns.cn-north-1.amazonaws.com.cn/x.pem", "https://SNS.us-east-1.amazonaws.com:443/?Action=ConfirmSubscription"]) {
      expect([url, isSnsUrl(url, undefined)]).toEqual([url, true]);
    }
    for (const url of [
      "http://sns.eu-west-1.amazonaws.com/x.pem",
      "https://sns.eu-west-1.amazonaws.com.evil.example/x.pem",
      "https://evil.example/sns.eu-west-1.amazonaws.com/x.pem",
      "https://sns.amazonaws.com/x.pem",
      "https://user:pass@sns.eu-west-1.amazonaws.com/x.pem",
      "https://sns.eu-west-1.amazonaws.com:8443/x.pem",
      "not a url",
    ]) {
      expect([url, isSnsUrl(url, undefined)]).toEqual([url, false]);
    }
    expect(isSnsUrl("http://127.0.0.1:8999/files/cert.pem", "http://127.0.0.1:8999")).toBe(true);
    expect(isSnsUrl("http://127.0.0.1:9000/files/cert.pem", "http://127.0.0.1:8999")).toBe(false);
    expect(isSnsUrl("https://sns.eu-west-1.amazonaws.com/x.pem", "http://127.0.0.1:8999")).toBe(false);
  });
});

describe("verifySnsMessage", () => {
  it("fetches a certificate once for a burst of messages, for both versions", async () => {
    const bucket = receiver.bucket("cert");
    await receiver.script(bucket, [{ status: 200, headers: { "content-type": "application/x-pem-file" }, body: CERT_PEM }]);
    const certUrl = `${receiver.hookUrl(bucket)}/SimpleNotificationService-burst.pem`;
    const origin = new URL(await testCertUrl()).origin;
    for (const version of ["1", "2", "1", "2"]) {
      const message = await signedSns({ Type: "Notification", Message: "{}" }, { version, certUrl });
      expect(await verifySnsMessage(message, origin)).toEqual({ ok: true });
    }
    expect(await receiver.requests(bucket)).toHaveLength(1);
  });
});
