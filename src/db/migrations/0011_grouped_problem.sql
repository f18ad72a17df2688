-- Schema version 11 (grouped GEMMs in the tuner): a problem may be a grouped (MoE) GEMM in DeepGEMM's contiguous or
-- masked layout (problem/grouped_problem.hpp). Its identity is what the host knows without reading the device:
-- group_kind ('contiguous' | 'masked'), groups (G), and for masked m_max (M_max) and expected_m; m, n, k and the other
-- columns are its dense view's (m: contiguous the padded total M, masked G x M_max). Its key is Problem::key() of
-- src/problem/problem.hpp ("grouped-contiguous_G4_..." / "grouped-masked_G32_mmax256_em64_...").
-- The per-group row counts are not part of the identity but are what tuning measured: group_rows holds them as a
-- comma list of G counts, group_rows_text as the shapes file gave them (a list or a seeded distribution such as
-- "skew:7:32768"); both are set by the first sweep that stores the problem.
-- Problems stored before are dense: 'none', 0 groups and empty distributions, and their keys are unchanged.
ALTER TABLE problem ADD COLUMN group_kind TEXT NOT NULL DEFAULT 'none';
ALTER TABLE problem ADD COLUMN groups INTEGER NOT NULL DEFAULT 0;
ALTER TABLE problem ADD COLUMN m_max INTEGER NOT NULL DEFAULT 0;
ALTER TABLE problem ADD COLUMN expected_m INTEGER NOT NULL DEFAULT 0;
ALTER TABLE problem ADD COLUMN group_rows TEXT NOT NULL DEFAULT '';
ALTER TABLE problem ADD COLUMN group_rows_text TEXT NOT NULL DEFAULT '';
