//! What a CO-RE relocation computes: [`CoreReloKind`].

/// What a CO-RE relocation computes (`enum bpf_core_relo_kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[doc(alias = "bpf_core_relo_kind")]
pub enum CoreReloKind {
    /// `BPF_CORE_FIELD_BYTE_OFFSET` (0).
    FieldByteOffset,
    /// `BPF_CORE_FIELD_BYTE_SIZE` (1).
    FieldByteSize,
    /// `BPF_CORE_FIELD_EXISTS` (2).
    FieldExists,
    /// `BPF_CORE_FIELD_SIGNED` (3).
    FieldSigned,
    /// `BPF_CORE_FIELD_LSHIFT_U64` (4).
    FieldLshiftU64,
    /// `BPF_CORE_FIELD_RSHIFT_U64` (5).
    FieldRshiftU64,
    /// `BPF_CORE_TYPE_ID_LOCAL` (6).
    TypeIdLocal,
    /// `BPF_CORE_TYPE_ID_TARGET` (7).
    TypeIdTarget,
    /// `BPF_CORE_TYPE_EXISTS` (8).
    TypeExists,
    /// `BPF_CORE_TYPE_SIZE` (9).
    TypeSize,
    /// `BPF_CORE_ENUMVAL_EXISTS` (10).
    EnumvalExists,
    /// `BPF_CORE_ENUMVAL_VALUE` (11).
    EnumvalValue,
    /// `BPF_CORE_TYPE_MATCHES` (12).
    TypeMatches,
    /// A kind this version does not know.
    Unknown(u32),
}

impl CoreReloKind {
    /// The kind numbered `k`.
    #[must_use]
    pub fn from_u32(k: u32) -> Self {
        use CoreReloKind::*;
        match k {
            0 => FieldByteOffset,
            1 => FieldByteSize,
            2 => FieldExists,
            3 => FieldSigned,
            4 => FieldLshiftU64,
            5 => FieldRshiftU64,
            6 => TypeIdLocal,
            7 => TypeIdTarget,
            8 => TypeExists,
            9 => TypeSize,
            10 => EnumvalExists,
            11 => EnumvalValue,
            12 => TypeMatches,
            k => Unknown(k),
        }
    }

    /// Its number.
    #[must_use]
    pub fn to_u32(self) -> u32 {
        use CoreReloKind::*;
        match self {
            FieldByteOffset => 0,
            FieldByteSize => 1,
            FieldExists => 2,
            FieldSigned => 3,
            FieldLshiftU64 => 4,
            FieldRshiftU64 => 5,
            TypeIdLocal => 6,
            TypeIdTarget => 7,
            TypeExists => 8,
            TypeSize => 9,
            EnumvalExists => 10,
            EnumvalValue => 11,
            TypeMatches => 12,
            Unknown(k) => k,
        }
    }

    /// libbpf's name for it (`byte_off`, `field_exists`, `type_matches` ...).
    #[must_use]
    pub fn name(self) -> &'static str {
        use CoreReloKind::*;
        match self {
            FieldByteOffset => "byte_off",
            FieldByteSize => "byte_sz",
            FieldExists => "field_exists",
            FieldSigned => "signed",
            FieldLshiftU64 => "lshift_u64",
            FieldRshiftU64 => "rshift_u64",
            TypeIdLocal => "local_type_id",
            TypeIdTarget => "target_type_id",
            TypeExists => "type_exists",
            TypeSize => "type_size",
            EnumvalExists => "enumval_exists",
            EnumvalValue => "enumval_value",
            TypeMatches => "type_matches",
            Unknown(_) => "unknown",
        }
    }

    /// A field relocation (kinds 0..=5).
    #[must_use]
    pub fn is_field_based(self) -> bool {
        self.to_u32() <= 5
    }

    /// A type relocation (kinds 6..=9 and 12).
    #[must_use]
    pub fn is_type_based(self) -> bool {
        matches!(self.to_u32(), 6..=9 | 12)
    }

    /// An enumerator relocation (kinds 10, 11).
    #[must_use]
    pub fn is_enumval_based(self) -> bool {
        matches!(self.to_u32(), 10 | 11)
    }
}
