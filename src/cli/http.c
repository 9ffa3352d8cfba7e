/* http.c — rlctl's admin calls: one libcurl exchange per command, and the
 * mapping of a failed answer to an exit code and a sentence on stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>

#include "cli/cli.h"

#define RLCTL_MAX_BODY_BYTES (64u << 20) /* a list of every limit stays far below */

typedef struct sink {
    char *data;
    size_t len, cap;
    bool too_big;
} sink;

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *userdata) {
    sink *s = userdata;
    size_t n = size * nmemb;
    if (s->len + n + 1 > RLCTL_MAX_BODY_BYTES) {
        s->too_big = true;
        return 0;
    }
    if (s->len + n + 1 > s->cap) {
        size_t cap = s->cap ? s->cap : 4096;
        while (cap < s->len + n + 1) cap *= 2;
        char *grown = realloc(s->data, cap);
        if (grown == NULL) return 0;
        s->data = grown;
        s->cap = cap;
    }
    memcpy(s->data + s->len, ptr, n);
    s->len += n;
    s->data[s->len] = '\0';
    return n;
}

long rlctl_http(const rlctl_global *global, const char *method, const char *path, const char *body,
                rlctl_response *out) {
    memset(out, 0, sizeof *out);
    sink s = {0};
    size_t url_len = strlen(global->url) + strlen(path) + 1;
    char *url = malloc(url_len);
    CURL *curl = curl_easy_init();
    if (url == NULL || curl == NULL) {
        snprintf(out->error, sizeof out->error, "out of memory");
        free(url);
        if (curl != NULL) curl_easy_cleanup(curl);
        out->body = calloc(1, 1);
        return 0;
    }
    snprintf(url, url_len, "%s%s", global->url, path);
    struct curl_slist *headers = curl_slist_append(NULL, "Content-Type: application/json");
    if (global->token != NULL) {
        char authorization[sizeof "Authorization: Bearer " + RLCTL_TOKEN_MAX_LEN];
        snprintf(authorization, sizeof authorization, "Authorization: Bearer %s", global->token);
        struct curl_slist *more = curl_slist_append(headers, authorization);
        if (more != NULL) headers = more;
    }
    if (global->cacert != NULL) curl_easy_setopt(curl, CURLOPT_CAINFO, global->cacert);
    char curl_err[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, (long)global->timeout_ms);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, curl_err);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &s);
    if (body != NULL) {
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    }
    CURLcode rc = curl_easy_perform(curl);
    if (rc == CURLE_OK) {
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &out->status);
    } else {
        out->status = 0;
        snprintf(out->error, sizeof out->error, "%s",
                 s.too_big ? "answer too large" : curl_err[0] ? curl_err : curl_easy_strerror(rc));
    }
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    free(url);
    /* The daemon ends a JSON answer with a newline; the commands print
     * their own after what they show. */
    if (s.len > 0 && s.data[s.len - 1] == '\n') s.data[--s.len] = '\0';
    out->body = s.data != NULL ? s.data : calloc(1, 1);
    out->body_len = s.len;
    return out->status;
}

void rlctl_response_free(rlctl_response *response) {
    free(response->body);
    response->body = NULL;
}

int rlctl_report_failure(const char *what, const rlctl_response *response) {
    if (response->status == 0) {
        fprintf(stderr, "rlctl: %s: %s\n", what, response->error);
        return RLCTL_EXIT_UNAVAILABLE;
    }
    const char *error = "", *detail = "";
    cJSON *root = cJSON_Parse(response->body);
    cJSON *e = cJSON_GetObjectItemCaseSensitive(root, "error");
    cJSON *d = cJSON_GetObjectItemCaseSensitive(root, "detail");
    if (cJSON_IsString(e)) error = e->valuestring;
    if (cJSON_IsString(d)) detail = d->valuestring;
    fprintf(stderr, "rlctl: %s: HTTP %ld%s%s%s%s\n", what, response->status, error[0] ? " " : "", error,
            detail[0] ? ": " : "", detail);
    cJSON_Delete(root);
    /* 4xx: the server understood and refused (invalid_request, not found);
     * 5xx (backend_error) and anything else: the service is not working. */
    return response->status >= 400 && response->status < 500 ? RLCTL_EXIT_REJECTED : RLCTL_EXIT_UNAVAILABLE;
}
