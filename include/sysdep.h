/* sysdep.h - the few things POSIX leaves to each system, done once for
 * Linux (glibc and musl) and macOS: where this binary is, a sweep's runs
 * dying with their sweep, and whether the CPU has AVX2.
 *
 * Not here: feature-test macros (the Makefile's CPPFLAGS: _POSIX_C_SOURCE,
 * and _DARWIN_C_SOURCE for the BSD names macOS hides under it), the
 * kernels' choice between their builds (ops.c). */
#ifndef NS_SYSDEP_H
#define NS_SYSDEP_H

#include <stddef.h>
#include <sys/types.h>

/* This binary's absolute path into buf[n]: Linux's /proc/self/exe,
 * macOS's _NSGetExecutablePath, else argv0 resolved as execvp would
 * (a name without '/' searched in PATH). 0, or -1 when none was found
 * (buf then holds argv0). */
int sysdep_exe_path(char *buf, size_t n, const char *argv0);

/* name as execvp finds it, absolute and resolved (realpath) into buf[n]:
 * with a '/', that file; else the first executable regular file of that
 * name in PATH's directories (an empty entry is the current directory;
 * no PATH: /usr/bin:/bin). 0, or -1 when there is none. */
int sysdep_which(char *buf, size_t n, const char *name);

/* Whether this x86 CPU (and its system) runs AVX2, and AVX2 and FMA:
 * GCC's and clang's __builtin_cpu_supports, but on macOS sysctl's
 * hw.optional (a cross-linked macOS binary has no compiler runtime's CPU
 * model). 0 on other CPUs. */
int sysdep_cpu_avx2(void);
int sysdep_cpu_avx2_fma(void);

/* The environment variable through which a sweep tells a run the pid it
 * must not outlive, where the kernel cannot (sysdep_die_with_parent). */
#define SYSDEP_PARENT_ENV "NORMSCOPE_SWEEP_PARENT"

/* In a child between fork and exec (async-signal-safe): ask the kernel
 * for SIGTERM when the parent ends (Linux's PR_SET_PDEATHSIG). 1 done,
 * 0 when this system has no such call (macOS) or NORMSCOPE_PARENT_WATCH
 * =poll asked for the portable way (the caller then sets
 * SYSDEP_PARENT_ENV in the run's environment), -1 on an error. */
int sysdep_die_with_parent(int use_kernel);

/* Whether the kernel's way is used (read in the parent, before fork:
 * getenv is not async-signal-safe). */
int sysdep_kernel_pdeath(void);

/* In a run: when SYSDEP_PARENT_ENV names a pid, a thread polls
 * getppid() every 100 ms and sends this process SIGTERM once its parent
 * is no longer that pid (the sweep was killed, even with -9), as
 * PR_SET_PDEATHSIG would. Does nothing without it. */
void sysdep_parent_watch(void);

#endif
