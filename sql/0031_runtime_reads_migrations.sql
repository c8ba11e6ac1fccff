-- 0031: the runtime role may read which migrations the database holds.
--
-- A build whose migrations have not been applied fails each statement that
-- needs one of them, which the service can only answer as "temporarily
-- unavailable". With the record readable, the service logs at start-up
-- which of its migrations the database lacks, and the `mosaic` commands
-- that run as the runtime role refuse to start with `run mosaic migrate`
-- instead (mosaic::db::migration_state). The record holds each migration's
-- number, name, checksum and time of application: nothing of the catalog
-- or of the receipts. Running this file again changes nothing.
GRANT USAGE ON SCHEMA mosaic_meta TO {{RUNTIME_ROLE}};
GRANT SELECT ON mosaic_meta.migrations TO {{RUNTIME_ROLE}};
