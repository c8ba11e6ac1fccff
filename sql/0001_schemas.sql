-- 0001: extensions and schemas.
--
-- catalog   products and their evidence units (the system of record copy)
-- search    the denormalised search projection the three arms read
-- receipts  append-only retrieval events and their candidate pools
CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE SCHEMA IF NOT EXISTS catalog;
CREATE SCHEMA IF NOT EXISTS search;
CREATE SCHEMA IF NOT EXISTS receipts;
