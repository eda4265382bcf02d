// package.json is the one place the version is written; from dist/src/ it is two levels up, in the
// source tree and in an installed package alike.
/** This package's version, e.g. `1.0.0`. */
export const VERSION: string = (require("../../package.json") as { version: string }).version;
