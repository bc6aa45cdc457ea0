-- Where the panel's canvas draws a journey's trigger and steps (JSON: {"trigger"?:{x,y},
-- "steps":{"<step id>":{x,y}}}); NULL: the canvas lays the journey out itself. Presentation
-- only, so it sits beside the definition, not in it, and is not versioned: moving a box on a
-- running journey makes no new version.
ALTER TABLE journeys ADD COLUMN layout TEXT;
