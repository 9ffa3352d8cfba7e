/* api_call.c — one request's road (handler.h): find the row, answer now or
 * start the endpoint, and answer at once when its done came before the
 * start returned.
 *
 * A call's state is the one thing two threads touch: the request's thread
 * (begin) and the thread that calls done (the backend's flusher, the admin
 * writer, or the request's own thread inside the start, as a synchronous
 * backend does). Whichever of begin and done comes second learns it from
 * the exchange: begin finishes the answer itself when done came first (no
 * thread hop for the memory backend), done hands the call back through
 * call->done when begin came first.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "server/api/endpoints.h"
#include "server/api/respond.h"

enum {
    CALL_BEGUN = 1, /* start under way */
    CALL_WAITING,   /* start returned; done will hand the call back */
    CALL_DONE,      /* the answer is ready */
};

void rl_api_call_init(rl_api_call *call) {
    memset(call, 0, sizeof *call);
    atomic_init(&call->state, 0);
}

void rl_api_call_free(rl_api_call *call) { rl__lease_call_free(&call->lease); }

void rl__api_call_done(rl_api_call *call) {
    /* acq_rel: the answer written before this is seen by whoever finishes. */
    if (atomic_exchange_explicit(&call->state, CALL_DONE, memory_order_acq_rel) == CALL_BEGUN) return;
    call->done(call);
}

/* An answer is JSON, without extra headers, unless its endpoint says otherwise. */
static void answer_plainly(rl_http_response *res) {
    res->allow = NULL;
    res->location = NULL;
    res->content_type = NULL;
    res->browser_page = false;
}

static void answer_unrouted(rl_handler_ctx *ctx, const rl_http_request *req, const char *allow,
                            rl_http_response *res) {
    if (allow == NULL) {
        rl_respond_no_route(ctx, res, req, "the API is under /v1/ (see /console)");
        return;
    }
    rl_respond_error(ctx, res, 405, RL_INVALID_REQUEST, NULL, NULL);
    res->allow = allow;
}

bool rl_api_begin(rl_handler_ctx *ctx, const rl_http_request *req, rl_api_call *call, rl_http_response *res) {
    answer_plainly(res);
    const char *allow;
    const rl_api_route *route = rl__api_route_of(req, &allow);
    call->route = NULL;
    if (route == NULL) {
        answer_unrouted(ctx, req, allow, res);
        return true;
    }
    call->route = route; /* what the request was, for its outcome (outcome.h) */
    if (route->answer != NULL) {
        route->answer(ctx, route, req, res);
        return true;
    }
    atomic_store_explicit(&call->state, CALL_BEGUN, memory_order_relaxed);
    if (route->start(ctx, route, req, call, res)) return true;
    if (atomic_exchange_explicit(&call->state, CALL_WAITING, memory_order_acq_rel) != CALL_DONE) return false;
    rl_api_finish(ctx, call, res);
    return true;
}

void rl_api_finish(rl_handler_ctx *ctx, rl_api_call *call, rl_http_response *res) {
    answer_plainly(res);
    call->route->finish(ctx, call, res);
}

void rl_api_call_end(rl_api_call *call) {
    if (call->route != NULL && call->route->end != NULL) call->route->end(call);
    call->route = NULL;
}

/* ---- waiting on the calling thread ------------------------------------------ */

typedef struct waiting_call {
    rl_api_call call;
    pthread_mutex_t mutex;
    pthread_cond_t answered;
    bool done;
} waiting_call;

static void waiting_done(rl_api_call *call) {
    waiting_call *waiting = (waiting_call *)((char *)call - offsetof(waiting_call, call));
    pthread_mutex_lock(&waiting->mutex);
    waiting->done = true;
    pthread_cond_signal(&waiting->answered);
    pthread_mutex_unlock(&waiting->mutex);
}

void rl_handle_request(rl_handler_ctx *ctx, const rl_http_request *req, rl_http_response *res) {
    waiting_call waiting;
    rl_api_call_init(&waiting.call);
    waiting.call.done = waiting_done;
    pthread_mutex_init(&waiting.mutex, NULL);
    pthread_cond_init(&waiting.answered, NULL);
    waiting.done = false;
    if (!rl_api_begin(ctx, req, &waiting.call, res)) {
        pthread_mutex_lock(&waiting.mutex);
        while (!waiting.done) pthread_cond_wait(&waiting.answered, &waiting.mutex);
        pthread_mutex_unlock(&waiting.mutex);
        rl_api_finish(ctx, &waiting.call, res);
    }
    rl_api_call_end(&waiting.call);
    rl_api_call_free(&waiting.call);
    pthread_cond_destroy(&waiting.answered);
    pthread_mutex_destroy(&waiting.mutex);
}
