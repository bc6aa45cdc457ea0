import { callProvider, isRetryableStatus } from "../provider-call";
import type { OutgoingSms, SmsSendResult, SmsProvider } from "./provider";

export interface Msg91Config {
  authkey: string;
  senderId: string;
  /** The panel's default MSG91 flow/template (its content `##message##`); a template may name its own. */
  templateId: string;
  /** The panel's default DLT template id; a template's own comes first. */
  dltTemplateId: string | null;
  /** https://control.msg91.com, or a stand-in. */
  apiUrl: string;
}

/**
 * MSG91's flow API (v5): a JSON POST with the `authkey` header, naming the flow/template (whose
 * DLT registration MSG91 holds), the DLT sender id, and each recipient with the variables of
 * the flow; the rendered message travels as `message`. The answer's `message` is the request
 * id that delivery reports name.
 */
export class Msg91Provider implements SmsProvider {
  readonly name = "msg91";
  private readonly url: string;

  constructor(private readonly config: Msg91Config) {
    this.url = `${config.apiUrl.replace(/\/+$/, "")}/api/v5/flow/`;
  }

  async send(message: OutgoingSms): Promise<SmsSendResult> {
    const dlt = message.dltTemplateId ?? this.config.dltTemplateId;
    if (!dlt) return { ok: false, retryable: false, error: "MSG91 needs a DLT template id: set one on the template or the panel's SMS settings" };
    const body = {
      template_id: message.providerTemplateId ?? this.config.templateId,
      sender: this.config.senderId,
      short_url: "0",
      DLT_TE_ID: dlt,
      recipients: [{ mobiles: message.to, message: message.text }],
    };
    const called = await callProvider("MSG91", this.url, {
      method: "POST",
      headers: { authkey: this.config.authkey, "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify(body),
    });
    if (!called.ok) return called;
    const { response, text } = called;
    let answer: { type?: unknown; message?: unknown } = {};
    try {
      answer = JSON.parse(text) as typeof answer;
    } catch {
      // reported below
    }
    // MSG91 answers 200 with type "error" for refused requests (bad authkey, template, number).
    if (response.ok && answer.type === "success" && typeof answer.message === "string" && answer.message) return { ok: true, providerMessageId: answer.message };
    const detail = typeof answer.message === "string" ? answer.message : text.slice(0, 300);
    if (response.ok) return { ok: false, retryable: false, error: `MSG91 refused the message: ${detail}` };
    return { ok: false, retryable: isRetryableStatus(response.status), error: `MSG91 answered ${response.status}: ${detail}` };
  }
}
