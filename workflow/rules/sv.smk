"""SV detection as Genomon does it: GenomonSV parse per sample (tumors and panel members; once
each however many pairs use it), GenomonSV merge of each control panel's junctions,
GenomonSV filt per pair (tumor-only pairs too) under Genomon's meta lines, sv_utils filter, and
the filtered calls as a VCF of breakend records.

Genomon's SV tools run from their own venv (.venv-sv/, bin/install) or, with --sdm conda,
envs/sv.yaml: GenomonSV 0.8.2 needs pysam < 0.24, which sv_filt checks before it runs. The
stage's paths, tools and options are in sv_paths.smk.
"""


rule sv_parse:
    input:
        bam=lambda wildcards: sv_parsed_bam(wildcards.sv_sample),
        # GenomonSV parse fetches read pairs by region.
        index=lambda wildcards: with_indexes(
            {"bam": sv_parsed_bam(wildcards.sv_sample)}
        )[1:],
    output:
        **sv_parse_files("{sv_sample}"),
    log:
        log_path("sv_parse", "{sv_sample}"),
    benchmark:
        bench_path("sv_parse", "{sv_sample}")
    priority: config["priorities"]["sv_parse"]
    conda:
        "../../envs/sv.yaml"
    envmodules:
        *env_modules("sv"),
    resources:
        **FACTS["sv_parse"].resources,
    params:
        genomon_sv=sv_tool("GenomonSV"),
        options=config_options("sv_parse", "params"),
        # GenomonSV writes its sort files beside the prefix: in the job's work directory, and
        # the four results move into sv/{sample}/ only once all are written.
        work_dir_setup=work_dir_setup("sv_parse"),
    shell:
        """
        (
            {params.work_dir_setup} {log:q}
            {params.genomon_sv} parse {input.bam:q} "$work/{wildcards.sv_sample}" {params.options}
            mv "$work/{wildcards.sv_sample}".*.clustered.bedpe.gz* "$(dirname {output.junction:q})"/
        ) >{log:q} 2>&1
        """


rule sv_merge_control:
    input:
        junctions=lambda wildcards: [
            sv_parse_files(name)[key]
            for name in SV_PANELS[wildcards.panel]
            for key in ("junction", "junction_tbi")
        ],
    output:
        control_info=f"{SV_DIR}/control_panel/{{panel}}.control_info.txt",
        merged=f"{SV_DIR}/non_matched_control_panel/{{panel}}.merged.junction.control.bedpe.gz",
        merged_tbi=f"{SV_DIR}/non_matched_control_panel/{{panel}}.merged.junction.control.bedpe.gz.tbi",
    log:
        log_path("sv_merge_control", "{panel}"),
    benchmark:
        bench_path("sv_merge_control", "{panel}")
    conda:
        "../../envs/sv.yaml"
    envmodules:
        *env_modules("sv"),
    params:
        genomon_sv=sv_tool("GenomonSV"),
        options=config_options("sv_merge", "params"),
        # Genomon's control_info.txt: label<TAB>parse prefix, one line per panel member.
        members=lambda wildcards: [
            f"{name}\t{sv_prefix(name)}" for name in SV_PANELS[wildcards.panel]
        ],
        work_dir_setup=work_dir_setup("sv_merge_control", tier="node_local"),
    shell:
        """
        (
            {params.work_dir_setup} {log:q}
            printf '%s\\n' {params.members:q} >{output.control_info:q}
            {params.genomon_sv} merge {output.control_info:q} "$work/merged.bedpe.gz" {params.options}
            mv "$work/merged.bedpe.gz.tbi" {output.merged_tbi:q}
            mv "$work/merged.bedpe.gz" {output.merged:q}
        ) >{log:q} 2>&1
        """


rule sv_filt:
    input:
        unpack(sv_filt_inputs),
        reference=REFERENCE,
    output:
        result=sv_result("{sv_tumor}", ".txt"),
    log:
        log_path("sv_filt", "{sv_tumor}"),
    benchmark:
        bench_path("sv_filt", "{sv_tumor}")
    priority: config["priorities"]["sv_filt"]
    conda:
        "../../envs/sv.yaml"
    envmodules:
        *env_modules("sv"),
    threads: config["sv_filt"]["thread_num"]
    resources:
        **FACTS["sv_filt"].resources,
    params:
        sv_python=sv_tool("python"),
        pysam_check=shlex.quote(SV_PYSAM_CHECK),
        genomon_sv=sv_tool("GenomonSV"),
        sv_utils=sv_tool("sv_utils"),
        controls=sv_filt_controls,
        options=f"{config_options('sv_filt', 'params')} {SV_ANNOTATION}",
        work_dir_setup=work_dir_setup("sv_filt"),
    shell:
        """
        (
            {params.work_dir_setup} {log:q}
            {params.sv_python} -c {params.pysam_check}
            # filt reads the parse files at its prefix and writes its own files beside them.
            for file in {input.junction:q} {input.junction_tbi:q} {input.improper:q} {input.improper_tbi:q}; do
                ln -s "$file" "$work/{wildcards.sv_tumor}${{file##*/{wildcards.sv_tumor}}}"
            done
            {params.genomon_sv} filt {input.tumor:q} "$work/{wildcards.sv_tumor}" {input.reference:q} \
                {params.controls} --thread_num {threads} {params.options}
            genomon_python -m genomon_smk.steps.sv_result result --raw "$work/{wildcards.sv_tumor}.genomonSV.result.txt" \
                --out {output.result:q} --version-of {params.genomon_sv} {params.sv_utils}
        ) >{log:q} 2>&1
        """


rule sv_utils_filter:
    input:
        result=rules.sv_filt.output.result,
    output:
        filtered=report(
            sv_result("{sv_tumor}", ".filt.txt"),
            caption="../report/sv_result.rst",
            category="Structural variants",
            subcategory="{sv_tumor}",
            labels={"content": "filtered SVs (Genomon's table)"},
        ),
    log:
        log_path("sv_utils_filter", "{sv_tumor}"),
    benchmark:
        bench_path("sv_utils_filter", "{sv_tumor}")
    conda:
        "../../envs/sv.yaml"
    envmodules:
        *env_modules("sv"),
    params:
        sv_utils=sv_tool("sv_utils"),
        options=f"{config_options('sv_filt', 'sv_utils_params')} {SV_ANNOTATION}",
    shell:
        """
        (
            {params.sv_utils} filter {input.result:q} {output.filtered:q} {params.options}
        ) >{log:q} 2>&1
        """


rule sv_vcf:
    input:
        filtered=rules.sv_utils_filter.output.filtered,
        reference=REFERENCE,
    output:
        vcf=sv_result("{sv_tumor}", ".filt.vcf.gz"),
        tbi=sv_result("{sv_tumor}", ".filt.vcf.gz.tbi"),
    log:
        log_path("sv_vcf", "{sv_tumor}"),
    benchmark:
        bench_path("sv_vcf", "{sv_tumor}")
    conda:
        "../../envs/python.yaml"
    envmodules:
        *env_modules("python"),
    params:
        normal=lambda wildcards: (
            f"--normal {SV_PAIRS[wildcards.sv_tumor].normal}"
            if SV_PAIRS[wildcards.sv_tumor].normal
            else ""
        ),
    shell:
        """
        (
            genomon_python -m genomon_smk.steps.sv_result vcf --result {input.filtered:q} \
                --reference {input.reference:q} --out {output.vcf:q} --tumor {wildcards.sv_tumor} {params.normal}
        ) >{log:q} 2>&1
        """


rule sv_summary:
    input:
        result=rules.sv_filt.output.result,
        filtered=rules.sv_utils_filter.output.filtered,
    output:
        tsv=report(
            sv_summary_file("{sv_tumor}", ".tsv"),
            caption="../report/sv_summary_tsv.rst",
            category="Structural variants",
            subcategory="{sv_tumor}",
            labels={"content": "SV counts (TSV)"},
        ),
        png=report(
            sv_summary_file("{sv_tumor}", ".png"),
            caption="../report/sv_summary_png.rst",
            category="Structural variants",
            subcategory="{sv_tumor}",
            labels={"content": "SV summary plot"},
        ),
    log:
        log_path("sv_summary", "{sv_tumor}"),
    benchmark:
        bench_path("sv_summary", "{sv_tumor}")
    conda:
        "../../envs/plot.yaml"
    envmodules:
        *env_modules("plot"),
    params:
        # matplotlib's font cache goes to the job's work directory (MPLCONFIGDIR), not to $HOME.
        work_dir_setup=work_dir_setup("sv_summary", tier="node_local"),
    shell:
        """
        (
            {params.work_dir_setup} {log:q}
            genomon_python -m genomon_smk.steps.sv_summary summary --result {input.result:q} \
                --filtered {input.filtered:q} --tumor {wildcards.sv_tumor:q} \
                --tsv {output.tsv:q} --png {output.png:q}
        ) >{log:q} 2>&1
        """


# What `rule all` asks for: every SV pair's results and summary.
SV_TARGETS = [
    *expand(
        sv_result("{sv_tumor}", "{suffix}"),
        sv_tumor=SV_PAIRS,
        suffix=[".txt", ".filt.txt", ".filt.vcf.gz", ".filt.vcf.gz.tbi"],
    ),
    *expand(rules.sv_summary.output, sv_tumor=SV_PAIRS),
]
