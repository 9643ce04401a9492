/* The runner's modules (and their tests) name assignments through this header:
 * struct assignment and its parsing are the work message of lib/proto.h, the
 * one home of what the scheduler sends. */
#ifndef PARSA_RUNNER_ASSIGN_H
#define PARSA_RUNNER_ASSIGN_H

#include "proto.h"

#endif
