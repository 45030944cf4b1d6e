/*
 * Errors with colltune's own message: MPI error codes made once per text.
 */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

/* ---- Errors ------------------------------------------------------------- */

/* MPI error codes carrying colltune's own message, created on first use so
 * that MPI_Error_string explains what was wrong. */
static pthread_mutex_t err_lock = PTHREAD_MUTEX_INITIALIZER;

int ct_raise_message(MPI_Comm comm, int errclass, const char *msg)
{
    /* A small table of messages already registered, so repeated errors do
     * not create codes without bound. */
    static struct {
        char msg[MPI_MAX_ERROR_STRING];
        int code;
    } known[32];
    static int nknown;
    int code = errclass;
    pthread_mutex_lock(&err_lock);
    int i;
    for (i = 0; i < nknown; i++)
        if (strcmp(known[i].msg, msg) == 0)
            break;
    if (i < nknown) {
        code = known[i].code;
    } else if (MPI_Add_error_code(errclass, &code) == MPI_SUCCESS) {
        MPI_Add_error_string(code, msg);
        if (nknown < (int)(sizeof known / sizeof known[0])) {
            snprintf(known[nknown].msg, sizeof known[nknown].msg, "%s", msg);
            known[nknown++].code = code;
        }
    } else {
        code = errclass;
    }
    pthread_mutex_unlock(&err_lock);
    /* MPI_COMM_NULL has no handler: MPI raises such errors on MPI_COMM_WORLD. */
    MPI_Comm_call_errhandler(comm == MPI_COMM_NULL ? MPI_COMM_WORLD : comm, code);
    return code;
}

/* "colltune: " and the formatted text, cut to fit. */
void ct_format_message(char *msg, size_t len, const char *fmt, va_list ap)
{
    int n = snprintf(msg, len, "colltune: ");
    vsnprintf(msg + n, len - (size_t)n, fmt, ap);
}

int ct_raise_error(MPI_Comm comm, int errclass, const char *fmt, ...)
{
    char msg[MPI_MAX_ERROR_STRING];
    va_list ap;
    va_start(ap, fmt);
    ct_format_message(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ct_raise_message(comm, errclass, msg);
}
