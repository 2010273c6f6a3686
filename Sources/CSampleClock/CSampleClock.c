// The sample clock is header-only (static inline, so reading it is not a call); this file
// gives the C target something to compile.
#include "CSampleClock.h"
