// State Flow — public exports only. Composition lives in adapters/pi; logic lives in
// storage/ (temporal algebra, durable backends) and machines/ (lifecycle statecharts).
export {};
