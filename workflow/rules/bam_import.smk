"""Bam import (Genomon's [bam_import]): a sample whose final BAM exists is not mapped; its BAM
and index are linked into Genomon's layout, so every later stage finds it where it finds the
BAMs this run makes."""


rule import_bam:
    input:
        bam=lambda wildcards: IMPORTED_BAMS[wildcards.sample],
    output:
        bam=final_bam("{sample}"),
        bai=final_bam("{sample}", ".bai"),
        md5=final_bam("{sample}", ".md5"),
    log:
        log_path("import_bam", "{sample}"),
    benchmark:
        bench_path("import_bam", "{sample}")
    wildcard_constraints:
        sample=one_of(IMPORTED_BAMS),
    conda:
        "../../envs/python.yaml"
    envmodules:
        *env_modules("python"),
    params:
        # Not in the command: a BAM replaced under its name changes it, and the sample reruns.
        inputs_held=lambda wildcards: sample_fingerprint(wildcards.sample),
        # The index beside the BAM, as `samtools index` names it (x.bam.bai) or as Picard does (x.bai).
        bai=lambda wildcards, input: next(
            index
            for index in (input.bam + ".bai", input.bam.removesuffix(".bam") + ".bai")
            if os.path.isfile(index)
        ),
    shell:
        """
        (
            ln -sfn {input.bam:q} {output.bam:q}
            ln -sfn {params.bai:q} {output.bai:q}
            (cd "$(dirname {output.bam:q})" && md5sum "$(basename {output.bam:q})") >{output.md5:q}
        ) >{log:q} 2>&1
        """
