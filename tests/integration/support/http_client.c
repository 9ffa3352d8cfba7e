/* http_client.c — libcurl behind the small API of http_client.h. */
#include "http_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

void rl_test_http_global_init(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

bool rl_test_client_init(rl_test_client *client, uint16_t port) {
    client->curl = curl_easy_init();
    snprintf(client->base_url, sizeof client->base_url, "http://127.0.0.1:%u", (unsigned)port);
    client->bearer_token = NULL;
    client->ca_file = NULL;
    return client->curl != NULL;
}

void rl_test_client_use_https(rl_test_client *client, const char *ca_file) {
    const char *port = strrchr(client->base_url, ':');
    char url[sizeof client->base_url];
    snprintf(url, sizeof url, "https://localhost%s", port != NULL ? port : "");
    memcpy(client->base_url, url, sizeof url);
    client->ca_file = ca_file;
}

void rl_test_client_cleanup(rl_test_client *client) {
    if (client->curl != NULL) curl_easy_cleanup(client->curl);
    client->curl = NULL;
}

typedef struct sink {
    char *data;
    size_t len, cap;
} sink;

static size_t on_body(char *bytes, size_t size, size_t count, void *user) {
    sink *s = user;
    size_t n = size * count;
    if (s->len + n + 1 > s->cap) {
        size_t cap = s->cap ? s->cap : 256;
        while (cap < s->len + n + 1) cap *= 2;
        char *data = realloc(s->data, cap);
        if (data == NULL) return 0;
        s->data = data;
        s->cap = cap;
    }
    memcpy(s->data + s->len, bytes, n);
    s->len += n;
    s->data[s->len] = '\0';
    return n;
}

long rl_test_client_request(rl_test_client *client, const char *method, const char *path,
                            const char *body, rl_test_response *out) {
    memset(out, 0, sizeof *out);
    CURL *curl = client->curl;
    /* reset keeps the connection cache: the next request reuses the socket. */
    curl_easy_reset(curl);
    char url[4096];
    snprintf(url, sizeof url, "%s%s", client->base_url, path);
    sink s = {NULL, 0, 0};
    struct curl_slist *headers = NULL;
    headers = curl_slist_append(headers, "Content-Type: application/json");
    headers = curl_slist_append(headers, "Expect:"); /* no 100-continue round trip */
    if (client->bearer_token != NULL) {
        char authorization[1024];
        snprintf(authorization, sizeof authorization, "Authorization: Bearer %s", client->bearer_token);
        headers = curl_slist_append(headers, authorization);
    }
    if (client->ca_file != NULL) curl_easy_setopt(curl, CURLOPT_CAINFO, client->ca_file);
    char error[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 10000L);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    if (strcmp(method, "GET") == 0) {
        curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
    } else {
        curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body != NULL ? body : "");
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                         (curl_off_t)(body != NULL ? strlen(body) : 0));
    }
    CURLcode rc = curl_easy_perform(curl);
    if (rc == CURLE_OK) {
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &out->status);
        char *type = NULL;
        curl_easy_getinfo(curl, CURLINFO_CONTENT_TYPE, &type);
        if (type != NULL) snprintf(out->content_type, sizeof out->content_type, "%s", type);
    } else {
        snprintf(out->error, sizeof out->error, "%.60s: %.180s", curl_easy_strerror(rc), error);
    }
    curl_slist_free_all(headers);
    if (s.data == NULL) s.data = calloc(1, 1);
    /* Every JSON answer of the daemon ends with a newline: checked here for
     * every test, then dropped, so that a test compares the JSON itself. */
    if (out->status != 0 && s.len > 0 && strncmp(out->content_type, "application/json", 16) == 0) {
        if (s.data[s.len - 1] == '\n') {
            s.data[--s.len] = '\0';
        } else {
            snprintf(out->error, sizeof out->error, "a JSON answer (HTTP %ld) without its final newline: %.160s",
                     out->status, s.data);
            out->status = 0;
        }
    }
    out->body = s.data;
    out->body_len = s.len;
    return out->status;
}

void rl_test_response_free(rl_test_response *response) {
    free(response->body);
    response->body = NULL;
}

static long elapsed_ms(const struct timespec *start) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec - start->tv_sec) * 1000 + (now.tv_nsec - start->tv_nsec) / 1000000;
}

long rl_test_raw_exchange(uint16_t port, const char *request, size_t request_len, int timeout_ms,
                          char *out, size_t out_size) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    struct sockaddr_in addr = {0};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        close(fd);
        return -1;
    }
    size_t sent = 0;
    while (sent < request_len) {
        ssize_t n = send(fd, request + sent, request_len - sent, MSG_NOSIGNAL);
        if (n <= 0) break; /* the server may refuse early: read what it said */
        sent += (size_t)n;
    }
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    size_t len = 0;
    while (len + 1 < out_size) {
        long left = timeout_ms - elapsed_ms(&start);
        if (left <= 0) break;
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, (int)left) <= 0) break;
        ssize_t n = recv(fd, out + len, out_size - 1 - len, 0);
        if (n <= 0) break;
        len += (size_t)n;
    }
    out[len] = '\0';
    close(fd);
    return (long)len;
}
