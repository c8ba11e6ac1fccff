-- 0030: a SKU may pass from one product to another within one statement.
--
-- catalog.products.sku is unique. Checked row by row (0002's constraint),
-- an import that swapped two products' SKUs always failed, and one that
-- gave a product's SKU to another while giving the first a new one failed
-- when the row taking the SKU came before the row giving it up.
-- DEFERRABLE INITIALLY IMMEDIATE checks the
-- same uniqueness at the end of each statement, so the import's upsert
-- sees the catalog it leaves, whatever the order. The constraint is not
-- the upsert's conflict target (product_id is), which a deferrable one
-- could not be.
--
-- The unique index is rebuilt: about a second a million products, while
-- the table is locked against writes and reads.
ALTER TABLE catalog.products
    DROP CONSTRAINT IF EXISTS products_sku_key,
    ADD CONSTRAINT products_sku_key UNIQUE (sku) DEFERRABLE INITIALLY IMMEDIATE;
