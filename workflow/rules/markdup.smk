"""Markdup: per sample and region, merge the region's coordinate-sorted pieces from all chunks
with biobambam2 bammerge (the map jobs sorted them with bamsort), streamed into bammarkduplicates
(which keeps a copy of its uncompressed input on the rule's temp tier), whose uncompressed
output samtools compresses and indexes.
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
    envmodules:
        *env_modules("markdup"),
    threads: job_threads("markdup")
    resources:
        **FACTS["markdup"].resources,
    params:
        work_dir_setup=work_dir_setup("markdup"),
        # The output is compressed on at least two threads, even in a one-thread job: the
        # first pass already runs two processes (bammerge beside bammarkduplicates' single
        # thread), and a sample's last markdup otherwise leaves a core idle while nothing else
        # can run (the end of a local run).
        compress_threads=lambda wildcards, threads: max(threads, 2),
    shell:
        """
        {params.work_dir_setup} {log:q}
        ls -1 {input.by_region:q}/{wildcards.region}/*.bam >"$work/pieces.txt"
        # bammerge opens every chunk's piece at once: as many files as the hard limit allows.
        ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
        # biobambam2 cuts its O=, M= and I= values at whitespace however they are quoted: it
        # runs in the work directory with relative names and writes the BAM to stdout.
        # bammerge streams into bammarkduplicates' first pass (one thread; the merge takes the
        # other core), which keeps a byte copy of its input for the second pass (rewritebam=2:
        # bammerge's output is uncompressed; its default snappy copy would be read on one
        # thread). The second pass writes uncompressed records that samtools compresses at
        # zlib's default level 6 and indexes: the same records, with htslib's libdeflate a fifth
        # less CPU than biobambam2's zlib and a 1 % smaller file (docs/benchmarks.md, session 18).
        (
            cd "$work"
            bammerge IL=pieces.txt level=0 verbose=0 tmpfile=merge \
                | bammarkduplicates M=metrics.txt markthreads=1 rewritebam=2 level=0 tmpfile=markdup \
                | samtools view --no-PG -@ {params.compress_threads} -O bam,level=6 --write-index \
                    -o {output.bam:q}##idx##{output.bai:q}
        ) 2>{log:q}
        mv "$work/metrics.txt" {output.metrics:q}
        """
