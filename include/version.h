#ifndef DLPROF_VERSION_H
#define DLPROF_VERSION_H
#define DLPROF_VERSION "0.1.0"
#endif
