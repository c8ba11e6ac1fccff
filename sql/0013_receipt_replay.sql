-- 0013: a receipt can name the event it replays.
--
-- `mosaic replay` re-runs a recorded search (same normalised query,
-- filters, limits and principal) against the current catalog and models,
-- and its receipt says which event it replays:
--
-- * replays_event_id: the replayed event. No foreign key: the replayed
--   event is older and its day partition is purged first (migration 0012),
--   which a reference would forbid; a replay whose replayed event is gone
--   reads like any other search.
-- * replay_profile: `recorded` (the replayed event's profile snapshot) or
--   `current` (the profile of the process that replayed it).
-- * replay_ineligible: the replayed event's pool members that no longer
--   passed its filters (or no longer existed) when the replay ran, so that
--   the difference between the two receipts can be told later from the
--   receipts alone (shared/src/replay/).
--
-- The columns are added to the partitioned parent, so every day partition
-- and the default partition get them. The runtime role's table-level
-- SELECT and INSERT (0012) cover them. Running this file again changes
-- nothing.
ALTER TABLE receipts.search_events ADD COLUMN IF NOT EXISTS replays_event_id uuid;
ALTER TABLE receipts.search_events ADD COLUMN IF NOT EXISTS replay_profile text;
ALTER TABLE receipts.search_events ADD COLUMN IF NOT EXISTS replay_ineligible text[];

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_constraint
                   WHERE conrelid = 'receipts.search_events'::regclass
                     AND conname = 'search_events_replay_check') THEN
        ALTER TABLE receipts.search_events ADD CONSTRAINT search_events_replay_check CHECK (
            (replays_event_id IS NULL AND replay_profile IS NULL AND replay_ineligible IS NULL)
            OR (replays_event_id IS NOT NULL AND replay_profile IN ('recorded', 'current')
                AND replay_ineligible IS NOT NULL));
    END IF;
END
$$;

-- The replays of one event, newest first.
CREATE INDEX IF NOT EXISTS search_events_replays_idx
    ON receipts.search_events (replays_event_id, created_at) WHERE replays_event_id IS NOT NULL;
