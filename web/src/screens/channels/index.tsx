import { Screen } from "../../ui";
import { may } from "../../components/role";
import type { ScreenProps } from "../../screen-props";
import { PushSettings } from "./push-settings";
import { SmsProvider } from "./sms-provider";
import { SmsSuppressions } from "./sms-suppressions";
import { SmsTemplates } from "./sms-templates";

// SMS and push, as journeys' sms, bpn and apn steps use them. The admin routes decide who may
// do what: provider and push setup are read by marketers and changed by owners; templates are
// read by everyone and changed by marketers; so are stopped numbers.

export function Channels({ panel }: ScreenProps) {
  const owner = may(panel, "channelSettings");
  const writable = may(panel, "channels");
  return (
    <Screen title="Channels">
      <p className="muted">How journeys' SMS and push steps reach people. Email's sender domains are under Sender domains.</p>
      {writable ? <SmsProvider panelId={panel.id} owner={owner} /> : <ViewerNote what="The SMS provider" />}
      <SmsTemplates panelId={panel.id} writable={writable} />
      <SmsSuppressions panelId={panel.id} writable={writable} />
      {writable ? <PushSettings panelId={panel.id} owner={owner} /> : <ViewerNote what="Push notification settings" />}
    </Screen>
  );
}

function ViewerNote({ what }: { what: string }) {
  return (
    <p className="muted">
      {what}: shown to marketers and owners of the panel only.
    </p>
  );
}
