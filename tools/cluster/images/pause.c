/* The pod sandbox's pause process: sleeps until told to stop and reaps orphaned children.
 * Built static (gcc -Os -static) into the real-node tier's pause image, so no registry is needed. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig) { _exit(128 + sig); }

static void reap(int sig) {
    (void)sig;
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
}

int main(void) {
    signal(SIGINT, stop);
    signal(SIGTERM, stop);
    signal(SIGCHLD, reap);
    for (;;) pause();
}
