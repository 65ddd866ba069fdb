/*
 * Loads a plugin that links libwrapbake.so (argv[1]) with dlopen, as a
 * runtime loads an extension module, runs it on a thread of its own, and
 * unloads the plugin while that thread lives on: the thread then exits,
 * which runs what the library left for a thread's exit, and the host
 * waits out the auto wrapper's promotion time.  The host links nothing of
 * wrapbake's.
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t moved = PTHREAD_COND_INITIALIZER;
static int (*run)(void);
static int rc = 1, ran, closed;

static void *worker(void *arg)
{
    (void)arg;
    int r = run();
    pthread_mutex_lock(&lock);
    rc = r;
    ran = 1;
    pthread_cond_broadcast(&moved);
    while (!closed)
        pthread_cond_wait(&moved, &lock);
    pthread_mutex_unlock(&lock);
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t th;
    if (argc != 2)
        return 2;
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("dlopen: %s\n", dlerror());
        return 1;
    }
    if (!(run = (int (*)(void))dlsym(h, "plugin_run")) ||
        pthread_create(&th, NULL, worker, NULL) != 0)
        return 1;
    pthread_mutex_lock(&lock);
    while (!ran)
        pthread_cond_wait(&moved, &lock);
    pthread_mutex_unlock(&lock);
    printf("plugin: %s\n", rc == 0 ? "a tcc wrapper ran" : "failed");
    dlclose(h);
    pthread_mutex_lock(&lock);
    closed = 1;
    pthread_cond_broadcast(&moved);
    pthread_mutex_unlock(&lock);
    pthread_join(th, NULL);
    nanosleep(&(struct timespec){0, 300 * 1000 * 1000}, NULL);
    printf("plugin: unloaded; its thread exited\n");
    return rc;
}
