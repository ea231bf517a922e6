-- The approximate index over every round vector (pgvector's HNSW, L2), for an approximate backend.
CREATE INDEX IF NOT EXISTS round_vectors_hnsw ON round_vectors USING hnsw (embedding vector_l2_ops)
