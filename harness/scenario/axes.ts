/** Where a scenario runs and how it is judged: the oracle profiles, the drivers, the executors. */
export const ORACLE_PROFILES = ["ib", "iwarp-rdmac", "linux"] as const;
export type OracleProfile = (typeof ORACLE_PROFILES)[number];
export const DRIVERS = ["siw", "erdma", "rxe"] as const;
export type DriverName = (typeof DRIVERS)[number];
export const EXECUTORS = ["kernel", "user"] as const;
export type ExecutorKind = (typeof EXECUTORS)[number];
