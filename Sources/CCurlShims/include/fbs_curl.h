// Typed, non-variadic wrappers for the libcurl calls Swift cannot make directly.
//
// `curl_easy_setopt`, `curl_easy_getinfo` and `curl_multi_setopt` are variadic, so Swift cannot call them
// (docs/c-interop.md, "Swift/C traps met here"). Each function here fixes the type of the variadic argument. Every name
// starts with `fbs_`. Only the HTTPClient module imports this header.

#ifndef FBS_CURL_H
#define FBS_CURL_H

#include <curl/curl.h>
#include <stddef.h>

/// The shape of CURLOPT_WRITEFUNCTION and CURLOPT_HEADERFUNCTION callbacks.
typedef size_t (*fbs_curl_data_callback)(char *_Nullable data, size_t size, size_t count, void *_Nullable context);

/// `curl_global_init(CURL_GLOBAL_ALL)`; the macro is not importable as a constant.
CURLcode fbs_curl_global_init_all(void);

/// `curl_easy_setopt` for options that take a `long`.
CURLcode fbs_curl_easy_setopt_long(CURL *_Nonnull easy, CURLoption option, long value);

/// `curl_easy_setopt` for options that take a `char *`; libcurl copies the string.
CURLcode fbs_curl_easy_setopt_string(CURL *_Nonnull easy, CURLoption option, const char *_Nullable value);

/// `curl_easy_setopt` for options that take an opaque pointer (CURLOPT_WRITEDATA, CURLOPT_ERRORBUFFER, ...).
CURLcode fbs_curl_easy_setopt_pointer(CURL *_Nonnull easy, CURLoption option, void *_Nullable value);

/// `curl_easy_setopt` for options that take a `struct curl_slist *`; the list must outlive the transfer.
CURLcode fbs_curl_easy_setopt_slist(CURL *_Nonnull easy, CURLoption option, struct curl_slist *_Nullable list);

/// `curl_easy_setopt` for options that take a `curl_off_t` (the `_LARGE` options).
CURLcode fbs_curl_easy_setopt_off_t(CURL *_Nonnull easy, CURLoption option, curl_off_t value);

/// Sets CURLOPT_WRITEFUNCTION.
CURLcode fbs_curl_easy_setopt_write_callback(CURL *_Nonnull easy, fbs_curl_data_callback _Nullable callback);

/// Sets CURLOPT_HEADERFUNCTION.
CURLcode fbs_curl_easy_setopt_header_callback(CURL *_Nonnull easy, fbs_curl_data_callback _Nullable callback);

/// Sets CURLOPT_POSTFIELDSIZE_LARGE to `length`, then CURLOPT_COPYPOSTFIELDS, in the order libcurl requires for
/// binary bodies. libcurl copies the bytes, so `data` need only live for the call. NULL means an empty body.
CURLcode fbs_curl_easy_setopt_copypostfields(CURL *_Nonnull easy, const void *_Nullable data, size_t length);

/// `curl_easy_getinfo` for infos that return a `long`.
CURLcode fbs_curl_easy_getinfo_long(CURL *_Nonnull easy, CURLINFO info, long *_Nonnull value);

/// `curl_easy_getinfo` for infos that return a `char *` owned by the easy handle (valid until the next transfer
/// or cleanup).
CURLcode fbs_curl_easy_getinfo_string(CURL *_Nonnull easy, CURLINFO info, const char *_Nullable *_Nonnull value);

/// `curl_easy_getinfo` for infos that return a `curl_off_t`.
CURLcode fbs_curl_easy_getinfo_off_t(CURL *_Nonnull easy, CURLINFO info, curl_off_t *_Nonnull value);

/// `curl_multi_setopt` for options that take a `long`.
CURLMcode fbs_curl_multi_setopt_long(CURLM *_Nonnull multi, CURLMoption option, long value);

/// Reads the next CURLMSG_DONE message from `curl_multi_info_read`, skipping any other kind.
/// Returns 1 and fills `easy` and `result` when there was one, 0 when the queue is empty.
int fbs_curl_multi_next_done(CURLM *_Nonnull multi, CURL *_Nullable *_Nonnull easy, CURLcode *_Nonnull result);

#endif
