-- expect: tests/plans/graph_block_order.lua:7: graph:block: block 2 out of order (valid: the next block, 1)
-- Blocks are what the pipeline cuts between (load.c reads each op's block):
-- they must come in order 0, 1, 2, ...
local w = weft
local g = w.graph { seq = 8, vocab = 16 }
g:block(0)
g:block(2)
