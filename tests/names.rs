//! User names that are WGSL keywords, reserved or predeclared words, raw identifiers, or named
//! like the locals of generated code: the module compiles (naga validated its WGSL while the
//! macro expanded), and the launchers keep the user's names.

#[allow(non_camel_case_types)]
#[tessera::kernels]
pub mod reserved {
    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct target {
        pub filter: u32,
        pub storage: f32,
        pub r#let: f32,
    }

    #[constants(TYPE = [2, 4], MATCH = TYPE * 2)]
    pub struct Sizes;

    fn sampler(texture: f32, read_write: &mut [f32; 2]) -> f32 {
        let var = texture.max(read_write[1]);
        read_write[0] = var;
        var
    }

    /// Bindings named like the locals of the generated `record` and `launch`.
    #[kernel(workgroup = [64], grid = [1], constants = Sizes)]
    pub fn r#match(
        filter: &target,
        batch: &mut [f32],
        variant: &[f32],
        folded: &[f32],
        logical: &[f32],
        args: &[f32],
    ) {
        let r#type = global_id().x;
        let mut function = [0.0f32, TYPE as f32];
        let vec4f = sampler(filter.storage + filter.r#let, &mut function);
        batch[r#type] = vec4f + variant[0] + folded[0] + logical[0] + args[0] + MATCH as f32;
    }

    #[kernel(workgroup = [64], grid = [1])]
    pub fn select(member_args: &[f32], batch: &mut [f32]) {
        batch[local_index()] = member_args[0];
    }

    #[family(select)]
    pub struct Pass {
        member_args: &[f32],
        batch: Option<&mut [f32]>,
    }
}

#[test]
fn reserved_and_generated_looking_names_compile_with_the_users_spelling() {
    let _ = reserved::Match::with_constants;
    let sizes = reserved::Sizes { r#type: 4 };
    assert_eq!(sizes.r#match(), 8);
    let _ = reserved::Pass::new;
    let _ = reserved::target {
        filter: 1,
        storage: 2.0,
        r#let: 3.0,
    };
    for spelled in [
        "struct target_",
        "filter_: u32",
        "fn match_",
        "fn select_",
        "fn sampler_(",
    ] {
        assert!(reserved::WGSL.contains(spelled), "{spelled}");
    }
}
