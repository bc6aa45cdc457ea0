import { createAdminClient, createApiClient, createEnvelopeClient } from "../src/index.ts";

// What `npm start` prints: its address, the admin token, and the export line (KEY, CLIENT_ID, PANEL).
const baseUrl = process.env.BASE_URL ?? "http://127.0.0.1:8787";
const { KEY = "", CLIENT_ID = "", PANEL = "", ADMIN_TOKEN = "" } = process.env;

// The apiv2 envelope: `type` and `activity` pick the operation, and type its parameters.
const apiv2 = createEnvelopeClient({ baseUrl, apikey: KEY });
const added = await apiv2.call("contact", "add", { data: { EMAIL: "ada@example.com", NAME: "Ada" }, listid: 1 });
if (added.error) throw new Error(`contact add: ${added.error.message}`);
console.log("contact added, request", added.data?.requestid);

const lists = await apiv2.call("lists", "add", { listname: "Newsletter", desc: "Made by the typed client" });
if (lists.error) throw new Error(`lists add: ${lists.error.message}`);

// A refusal names the field and why.
const refused = await apiv2.call("contact", "add", { data: { NAME: "No email" } });
console.log("refused:", refused.response.status, refused.error?.message);

// The admin API, with the deployment's admin token: the panel's activities.
const admin = createAdminClient({ baseUrl, adminToken: ADMIN_TOKEN });
const defined = await admin.GET("/admin/v1/panels/{panel}/activities", { params: { path: { panel: PANEL } } });
if (defined.error) throw new Error(`activities: ${defined.error.error}`);
const addToCart = defined.data.activities.find((activity) => activity.name === "add_to_cart");
if (!addToCart) throw new Error("the demo panel has no add_to_cart activity");

// The activity API: record that Ada added a kettle to her cart.
const api = createApiClient({ baseUrl });
const recorded = await api.POST("/{version}/activity/singleactivity/{client_id}", {
  params: { path: { version: "v1", client_id: CLIENT_ID } },
  body: { activityid: addToCart.activityid, identity: "ada@example.com", activity_params: { name: "Kettle", prid: 1234, price: 29.5, prqt: 1 } },
});
if (recorded.error) throw new Error(`singleactivity: ${recorded.error.message}`);
console.log("activity recorded:", recorded.data.result);

// Back in the admin API: Ada as the panel keeps her.
const ada = await admin.GET("/admin/v1/panels/{panel}/contacts/{key}", { params: { path: { panel: PANEL, key: "ada@example.com" } } });
if (ada.error) throw new Error(`contact: ${ada.error.error}`);
console.log("ada@example.com:", ada.data.attributes);
