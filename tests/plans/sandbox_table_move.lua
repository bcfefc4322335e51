-- expect: tests/plans/sandbox_table_move.lua:3: plan stopped: table.move of 9223372036854775806 elements would run past the plan's budget
-- table.move over the whole integer range moves nils for ever, inside C.
table.move({}, 1, math.maxinteger - 1, 2)
return weft.plan {}
