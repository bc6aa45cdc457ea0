-- Issue 43 (one renderer for every channel): a campaign message keeps what its merge tags were
-- filled with, so message logs show the subject it was sent with and its copy can be viewed.
-- subject: the filled subject, NULL where the campaign's subject has no merge tags (the
-- campaign's own subject stands for it). merge_values: a JSON object of the values the
-- subject's and body's tags were filled with (missing and empty ones left out: their fallback
-- stood for them), NULL where there were none; the copy is the campaign's body filled again
-- with them. A few bytes a message, pruned with the row (CAMPAIGN_MESSAGES_DAYS) and erased
-- with the contact.
ALTER TABLE campaign_messages ADD COLUMN subject TEXT;
ALTER TABLE campaign_messages ADD COLUMN merge_values TEXT;
