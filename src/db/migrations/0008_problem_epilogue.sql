-- Schema version 8 (output types and fused epilogues): the fused epilogue becomes part of the problem. bias ('none' | 'bf16') and
-- act ('none' | 'relu' | 'gelu_tanh') are problem columns (Problem::bias, Problem::act); the output type
-- already had its column (dtype_d, now bf16 | f32 | e4m3). Problems stored before had no epilogue, which
-- the defaults state; their keys carry no epilogue token, so they are unchanged (Problem::key()).
ALTER TABLE problem ADD COLUMN bias TEXT NOT NULL DEFAULT 'none';
ALTER TABLE problem ADD COLUMN act TEXT NOT NULL DEFAULT 'none';
