"""Markdup: per sample and region, join the region's pieces from all chunks, sort with
biobambam2 bamsort and mark duplicates with bammarkduplicates (which writes the index).
"""


rule markdup:
    input:
        by_region=rules.gather_map.output[0],
    output:
        bam=temp(tier_file("markdup", "markdup/{sample}/{region}.markdup.bam")),
        bai=temp(tier_file("markdup", "markdup/{sample}/{region}.markdup.bam.bai")),
        metrics=f"{OUTPUT_DIR}/qc/{{sample}}/markdup_metrics/{{region}}.txt",
    log:
        log_path("markdup", "{sample}/{region}"),
    benchmark:
        bench_path("markdup", "{sample}/{region}")
    priority: config["priorities"]["markdup"]
    conda:
        "../../envs/markdup.yaml"
    threads: config["markdup"]["threads"]
    resources:
        **FACTS["markdup"].resources,
    params:
        work_dir_setup=work_dir_setup("markdup"),
    shell:
        """
        {params.work_dir_setup} {log:q}
        ls -1 {input.by_region:q}/{wildcards.region}/*.bam >"$work/pieces.txt"
        # bammarkduplicates cuts its O=, M= and I= values at whitespace however they are quoted:
        # it runs in the work directory with relative names and writes the BAM to stdout.
        # It reads stdin itself: given I=/dev/stdin it tries a second pass and fails.
        (
            cd "$work"
            samtools cat -b pieces.txt -o - \
                | bamsort SO=coordinate inputformat=bam level=1 inputthreads={threads} outputthreads={threads} \
                    sortthreads={threads} tmpfile=bamsort \
                | bammarkduplicates M=metrics.txt markthreads={threads} \
                    index=1 indexfilename={output.bai:q} tmpfile=markdup >{output.bam:q}
        ) 2>{log:q}
        mv "$work/metrics.txt" {output.metrics:q}
        """
