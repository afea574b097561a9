//! tessera's kernel macros (in progress).
