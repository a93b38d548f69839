// libFuzzer's driver, called from each fuzzer's entry point (see Fuzz/Package.swift for why).
#ifndef FBS_FUZZER_DRIVER_H
#define FBS_FUZZER_DRIVER_H

#include <stddef.h>
#include <stdint.h>

/// Provided by libFuzzer (-sanitize=fuzzer): parses libFuzzer's flags and runs `callback` on each input.
int LLVMFuzzerRunDriver(int *_Nonnull argc, char *_Nullable *_Nonnull *_Nonnull argv,
                        int (*_Nonnull callback)(const uint8_t *_Nonnull data, size_t size));

#endif
