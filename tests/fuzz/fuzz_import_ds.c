/* fuzz_import_ds.c: libFuzzer harness for `weft import-deepspeed`
 * (compiler/import_ds.c).  Each input is a DeepSpeed config; the model comes
 * from tests/import/model_tricky.lua (run from the repository root), the
 * world size from the input's length so that both derivation rules run. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fuzz_input.h"
#include "import_ds.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *json = fuzz_input_file("ds_config.json", data, size);
    char out[4300], err[1024];
    snprintf(out, sizeof out, "%.*s.out.lua", (int)(strlen(json) - strlen(".json")), json);
    int world = 1 + (int)(size % 8);
    (void)import_deepspeed(json, "tests/import/model_tricky.lua", world, out, NULL, err, sizeof err);
    return 0;
}
