"""Gene annotation (Genomon's [annotation]), per pair after the merge: the merged calls
(genomon_mutation.calls.txt, kept) with ANNOVAR's five refGene columns after Alt become
result.txt, which the final filter, the VCFs (consequence in INFO), the summary and post-analysis
(Merge_Func; paplot's mutation matrix) read. Changing only the genes reruns this and what reads
the results, no calling. By this project's clean-room annotator (genomon_smk.tools.annotate) or,
with annotation.tool: annovar, by the user's ANNOVAR (genomon_smk.steps.annovar). Planned in
genomon_smk.plan.annotation (config gene_annotation, annotation.*)."""

if ANNOTATION.enabled:

    rule annotate_mutation:
        input:
            calls=MERGED_CALLS,
            reference=REFERENCE,
            genes=[ANNOTATION.genes.path] if ANNOTATION.tool == "genomon" else [],
        output:
            result=mutation_result("{tumor}", ".txt"),
        log:
            log_path("annotate_mutation", "{tumor}"),
        benchmark:
            bench_path("annotate_mutation", "{tumor}")
        priority: config["priorities"]["annotate_mutation"]
        conda:
            "../../envs/python.yaml"
        envmodules:
            *env_modules("python"),
        params:
            command=annotation_command,
            work_dir_setup=work_dir_setup("annotate_mutation", tier="node_local"),
        shell:
            """
            (
                {params.work_dir_setup} {log:q}
                {params.command}
            ) >{log:q} 2>&1
            """
