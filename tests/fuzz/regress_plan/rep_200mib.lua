-- 200 MiB of string.rep (the sandbox's memory cap is 256 MiB): under
-- AddressSanitizer each repetition's memcpy is intercepted, about 3 s of CPU
-- time inside one C function, past the sandbox's watchdog, which ended the
-- fuzzer with exit status 1 and no report.  fuzz_plan bounds string.rep.
error(string.rep("x", 200 << 20))
