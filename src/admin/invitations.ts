import { invitationAnswer, invitationListAnswer, invitationRevokedAnswer } from "../domain/answers/panels";
import { NEEDS } from "../domain/permissions";
import { inviteOperatorBody } from "../domain/operators";
import { unwrap } from "../lib/http/errors";
import { inviteOperator, resendInvitation, revokeInvitation } from "../services/operators/invitations";
import { openInvitations, type Invitation } from "../store/invitations";
import { isoTime } from "../store/sql";
import { auditorOf } from "./audit";
import { definePanelRoute } from "./route";

function invitationView(invitation: Invitation, now = Date.now()) {
  return {
    id: invitation.id,
    email: invitation.email,
    role: invitation.role,
    invited_by: invitation.invitedBy,
    sent_at: isoTime(invitation.sentAt),
    expires_at: isoTime(invitation.expiresAt),
    expired: invitation.expiresAt <= now,
  };
}

const listInvitations = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/invitations",
  role: NEEDS.team,
  response: invitationListAnswer,
  summary: "The panel's open invitations (not yet accepted nor revoked; expired ones included until resent or revoked), newest first",
  async handle({ env, panel }) {
    const now = Date.now();
    return { invitations: (await openInvitations(env.DB, panel.id)).map((invitation) => invitationView(invitation, now)) };
  },
});

const invite = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/invitations",
  role: NEEDS.team,
  response: invitationAnswer,
  status: 201,
  body: inviteOperatorBody,
  summary:
    "Invite an address to the panel with a role: it gets a mail with a single-use link, valid for 7 days, to choose its password and sign in. Inviting an address whose invitation is open sends a new link (the old one stops working); 409 when the address already has a role in the panel",
  async handle({ env, db, caller, body, panel }) {
    return invitationView(unwrap(await inviteOperator(env, db, panel, body, auditorOf(caller))));
  },
});

const resend = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/invitations/:invitation/resend",
  role: NEEDS.team,
  response: invitationAnswer,
  summary: "Mail an open invitation again with a new link valid for 7 days; the previous link stops working",
  async handle({ env, db, caller, path, panel }) {
    return invitationView(unwrap(await resendInvitation(env, db, panel, path.invitation, auditorOf(caller))));
  },
});

const revoke = definePanelRoute({
  method: "DELETE",
  path: "/panels/:panel/invitations/:invitation",
  role: NEEDS.team,
  response: invitationRevokedAnswer,
  summary: "Revoke an open invitation: its link then says it was revoked",
  async handle({ env, db, caller, path, panel }) {
    unwrap(await revokeInvitation(env, db, panel.id, path.invitation, auditorOf(caller)));
    return { revoked: true };
  },
});

export const invitationRoutes = [listInvitations, invite, resend, revoke];
