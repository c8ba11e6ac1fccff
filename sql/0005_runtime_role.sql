-- 0005: least privilege for the runtime role.
--
-- The functions connect as {{RUNTIME_ROLE}}: it reads the catalog and the
-- projection, and appends and reads receipts. It cannot change the catalog,
-- and it cannot rewrite or delete a receipt. Migrations and loading use the
-- owner role that runs this file.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{{RUNTIME_ROLE}}') THEN
        RAISE EXCEPTION 'role {{RUNTIME_ROLE}} does not exist; create it first: CREATE ROLE {{RUNTIME_ROLE}} LOGIN PASSWORD ''...''';
    END IF;
END
$$;

REVOKE ALL ON ALL TABLES IN SCHEMA catalog, search, receipts FROM {{RUNTIME_ROLE}};
GRANT USAGE ON SCHEMA catalog, search, receipts TO {{RUNTIME_ROLE}};
GRANT SELECT ON ALL TABLES IN SCHEMA catalog TO {{RUNTIME_ROLE}};
GRANT SELECT ON ALL TABLES IN SCHEMA search TO {{RUNTIME_ROLE}};
GRANT SELECT, INSERT ON ALL TABLES IN SCHEMA receipts TO {{RUNTIME_ROLE}};
GRANT EXECUTE ON FUNCTION search.identifier_key(text) TO {{RUNTIME_ROLE}};
REVOKE EXECUTE ON FUNCTION search.refresh_projection(text[]) FROM PUBLIC;
