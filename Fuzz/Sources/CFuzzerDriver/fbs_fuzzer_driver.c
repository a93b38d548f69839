// Declarations only (include/fbs_fuzzer_driver.h); libFuzzer itself is linked by -sanitize=fuzzer.
#include "fbs_fuzzer_driver.h"
