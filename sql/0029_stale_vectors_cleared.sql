-- 0029: a vector computed from a text the row no longer holds is cleared.
--
-- Since 0028, search.refresh_projection clears a row's vector whenever its
-- embedding text changes; rows whose text changed before 0028 was applied
-- still hold the vector of their old text, and the semantic arm finds them
-- by what they used to say until `mosaic embed` runs. This clears the
-- vector, its model and its text hash of every row whose embedded text
-- hash is not the hash of the text it holds, as refresh_projection does:
-- `mosaic embed` embeds them again (it embeds exactly the rows without a
-- vector of their text). Rows already without a vector are left untouched.
-- Running this file again changes nothing.

UPDATE search.product_projection
   SET embedding = NULL, embedding_model = NULL, embedded_text_hash = NULL
 WHERE embedded_text_hash IS DISTINCT FROM embedding_text_hash
   AND (embedding IS NOT NULL OR embedding_model IS NOT NULL OR embedded_text_hash IS NOT NULL);
