/* The unit tests' way into the engine (tests/unit only; engine-private): the
 * model itself, and the engine's lock to read it by, for checks of fields no
 * view shows. The daemon's code reads the model through the views of
 * engine.h instead. */
#ifndef PARSA_ENGINE_TEST_H
#define PARSA_ENGINE_TEST_H

#include "engine.h"

/* Hold the lock while reading engine_test_model()'s objects. */
void engine_test_hold(struct engine *e);
void engine_test_release(struct engine *e);
struct model *engine_test_model(struct engine *e);

#endif
