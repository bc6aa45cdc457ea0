-- Panel settings for existing clients (CONTRACT 8).

-- What a contact call does with attributes the panel's schema does not have: refuse the call
-- (as before), store the known ones and list the others as ignored, or create them as strings.
ALTER TABLE panels ADD COLUMN unknown_attributes TEXT NOT NULL DEFAULT 'reject'
  CHECK (unknown_attributes IN ('reject', 'ignore', 'create'));

-- Origins whose browser pages may call the public API (CORS): a JSON array of origins such as
-- "https://shop.example.com", or ["*"]. Empty: none.
ALTER TABLE panels ADD COLUMN cors_origins TEXT NOT NULL DEFAULT '[]';
