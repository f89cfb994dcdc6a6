//! The quota every area's writes count against: the tenant's `usage` row
//! (bytes and pastes held), reserved and released in the same transaction
//! as the write that takes or frees the room.

/// Reserves one paste of `$1` bytes for tenant `$2` if it fits the tenant's
/// quotas (one guarded `UPDATE`; no row changed = over quota or no tenant).
/// Shared by `Catalog::reserve` and `Catalog::record_paste`.
pub(crate) const RESERVE_USAGE: &str = "UPDATE usage SET bytes = bytes + $1, pastes = pastes + 1 \
     WHERE tenant_id = $2 \
     AND bytes + $1 <= (SELECT quota_bytes FROM tenants WHERE id = $2) \
     AND pastes + 1 <= (SELECT quota_pastes FROM tenants WHERE id = $2)";

/// Gives back one paste of `$1` bytes of tenant `$2`, never below zero.
/// Shared by [`Catalog::release`] and [`Catalog::forget_paste`].
pub(crate) const RELEASE_USAGE: &str = "UPDATE usage SET bytes = CASE WHEN bytes >= $1 THEN bytes - $1 ELSE 0 END, \
     pastes = CASE WHEN pastes >= 1 THEN pastes - 1 ELSE 0 END \
     WHERE tenant_id = $2";
