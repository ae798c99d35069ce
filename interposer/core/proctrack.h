/* SPDX-License-Identifier: MIT */
/*
 * proctrack: the process records of the audit stream (fork, exec, exit) and the sandbox
 * side ids of every record. See "Process records" in audit/SCHEMA.md for the choice.
 *
 *   proctrack_open()   before the sandbox starts: subscribe to the kernel's proc
 *                      connector (needs CAP_NET_ADMIN); without it, only exec records
 *   proctrack_start()  once the stream's header is written: the thread that turns
 *                      connector events of the sandbox's processes into records
 *   proctrack_call()   a notifier thread, for every call before it is answered: reads
 *                      the caller's ids, and writes the record of an execve/execveat
 *   proctrack_ids()    the same thread, for the call's sys record: pid, sandbox pid/tid
 *   proctrack_stop()   after the sandbox's last process is gone: drain, join
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

struct proctrack;
struct audit_writer;
struct sup_call;

/* Always returns a tracker (NULL only without memory); *why says why the connector is
 * not there (NULL when it is). */
struct proctrack *proctrack_open(const char **why);
bool proctrack_connected(const struct proctrack *pt);
/* root: the host pid of the sandbox's first process (the keeper). */
int proctrack_start(struct proctrack *pt, struct audit_writer *w, pid_t root);
void proctrack_call(struct sup_call *c);
void proctrack_ids(struct proctrack *pt, pid_t tid, pid_t *pid, pid_t *spid, pid_t *stid);
/* Records the events still queued, stops the thread; returns events the kernel dropped. */
unsigned long proctrack_stop(struct proctrack *pt);
void proctrack_free(struct proctrack *pt);
