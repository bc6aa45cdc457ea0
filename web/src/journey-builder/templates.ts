import type { JourneyInput } from "../../../src/domain/answers";
import type { StepSettings, StepType } from "./model";

/** What a step dropped from the palette starts with: the fields it needs, empty where only the marketer can say. */
export function newStep(type: StepType): StepSettings {
  switch (type) {
    case "email":
      return { type, subject: "", html: "", sender_name: "", sender_email: "" };
    case "sms":
      return { type, text: "" };
    case "apn":
    case "bpn":
      return { type, text: "" };
    case "wait_for_event":
      return { type, events: ["open"], within: "1d" };
    case "delay":
      return { type, for: "1h" };
    case "condition":
      return { type, filter: [{ attribute: "", op: "eq", value: "" }] };
    case "split":
      return { type, branches: [{ percent: 50 }, { percent: 50 }] };
    case "webhook":
      return { type, webhook: "", attributes: [], params: {} };
  }
}

export interface PaletteItem {
  type: StepType;
  label: string;
  hint: string;
}

export const PALETTE: PaletteItem[] = [
  { type: "email", label: "Email", hint: "send an email" },
  { type: "sms", label: "SMS", hint: "send a text message" },
  { type: "apn", label: "App push", hint: "send an app push notification" },
  { type: "bpn", label: "Web push", hint: "send a browser push notification" },
  { type: "wait_for_event", label: "Wait for event", hint: "wait for an open, click or activity, up to a time" },
  { type: "delay", label: "Delay", hint: "wait a fixed time" },
  { type: "condition", label: "Condition", hint: "branch on the contact's attributes" },
  { type: "split", label: "A/B split", hint: "send contacts down 2 to 4 branches by percent, and measure a goal" },
  { type: "webhook", label: "Webhook", hint: "send an event to an operational webhook" },
];

export const STEP_LABELS = Object.fromEntries(PALETTE.map((item) => [item.type, item.label])) as Record<StepType, string>;

export interface JourneyTemplate {
  key: string;
  title: string;
  description: string;
  definition: Pick<JourneyInput, "trigger" | "filter" | "steps">;
}

const trigger = { type: "activity", activity: "" } as const;
const hook = { type: "webhook" as const, webhook: "", attributes: ["EMAIL"], params: {} };

/** The trigger's activity, then a wait for a second activity `within`, then the webhook on `on` (the second came, or not). */
function secondActivity(within: string, on: "event" | "timeout"): JourneyTemplate["definition"] {
  return {
    trigger,
    steps: [
      { id: "second", type: "wait_for_event", events: { activity: "" }, within },
      { id: "hook", after: "second", on, ...hook },
    ],
  };
}

/** The four webhook conditions of spec 6.3, each a canvas to adapt (activities and webhook left to choose). */
export const TEMPLATES: JourneyTemplate[] = [
  {
    key: "one-action",
    title: "One action",
    description: "A webhook each time a contact performs an activity.",
    definition: { trigger, steps: [{ id: "hook", ...hook }] },
  },
  {
    key: "several-actions",
    title: "Several actions",
    description: "A webhook when a contact performs one activity and then another within a time.",
    definition: secondActivity("1d", "event"),
  },
  {
    key: "no-second-action",
    title: "Action not followed by a second",
    description: "A webhook when a contact performs an activity and not a second one within a time.",
    definition: secondActivity("1h", "timeout"),
  },
  {
    key: "filtered-action",
    title: "Action by certain contacts",
    description: "A webhook when a contact whose attributes match performs an activity.",
    definition: {
      trigger,
      steps: [
        { id: "who", type: "condition", filter: [{ attribute: "", op: "eq", value: "" }], then: "hook" },
        { id: "hook", ...hook },
      ],
    },
  },
];

export const BLANK: JourneyTemplate["definition"] = { trigger, steps: [] };
