// libcurl for Swift: typed wrappers for the variadic curl_easy_setopt/getinfo, which Swift
// cannot call, and for the macros it cannot import.
#ifndef CCURL_SHIM_H
#define CCURL_SHIM_H

#include <curl/curl.h>
#include <sys/socket.h>
#include <netinet/in.h>

typedef size_t (*ccurl_data_callback)(char *data, size_t size, size_t count, void *context);
typedef int (*ccurl_xferinfo_callback)(void *context, curl_off_t download_total, curl_off_t downloaded, curl_off_t upload_total, curl_off_t uploaded);
typedef curl_socket_t (*ccurl_opensocket_callback)(void *context, curlsocktype purpose, struct curl_sockaddr *address);

static inline CURLcode ccurl_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode ccurl_setopt_off(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode ccurl_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode ccurl_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode ccurl_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode ccurl_setopt_data_function(CURL *handle, CURLoption option, ccurl_data_callback function) {
    return curl_easy_setopt(handle, option, function);
}
static inline CURLcode ccurl_setopt_xferinfo_function(CURL *handle, ccurl_xferinfo_callback function) {
    return curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, function);
}
static inline CURLcode ccurl_setopt_opensocket_function(CURL *handle, ccurl_opensocket_callback function) {
    return curl_easy_setopt(handle, CURLOPT_OPENSOCKETFUNCTION, function);
}
static inline CURLcode ccurl_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}
static inline CURLcode ccurl_getinfo_string(CURL *handle, CURLINFO info, char **value) {
    return curl_easy_getinfo(handle, info, value);
}
static inline curl_socket_t ccurl_socket_bad(void) { return CURL_SOCKET_BAD; }
static inline size_t ccurl_readfunc_abort(void) { return CURL_READFUNC_ABORT; }

#endif
